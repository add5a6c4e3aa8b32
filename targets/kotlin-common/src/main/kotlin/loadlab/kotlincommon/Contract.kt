// Shared by the Kotlin targets: each pom adds ../kotlin-common/src/main/kotlin (and, for Config
// and Portfolio, ../java-common/src/main/java) as source roots, the way the Java targets share
// java-common. No framework code here: only the contract's rules (../../CONTRACT.md).
package loadlab.kotlincommon

import loadlab.common.Config
import loadlab.common.Portfolio
import java.nio.file.Path
import java.time.ZoneOffset
import java.time.ZonedDateTime
import java.time.format.DateTimeFormatter
import java.util.Locale

/** The contract's limits ("Parameters and the 400 rule"). */
object Limits {
    const val DELAY_MS = 10_000
    const val BLOCK_MS = 1_000
    const val COMPUTE_N = 100_000
    const val BYTES_N = 10 * 1024 * 1024
    const val CALLS = 64
    const val ECHO_BYTES = 1024 * 1024
}

/** A parameter that breaks the 400 rule; its message names the parameter. No stack trace. */
class BadRequest(message: String) : RuntimeException(message, null, false, false)

/**
 * The 400 rule: [raw] (the parameter's first value, null when missing) must be one or more
 * ASCII digits, leading zeros allowed, and at most [max].
 */
fun param(name: String, raw: String?, max: Int): Int {
    val value = raw ?: ""
    val digits = value.trimStart('0').ifEmpty { "0" }
    if (value.isEmpty() || !value.all { it in '0'..'9' } || digits.length > 9 || digits.toInt() > max) {
        throw BadRequest("query parameter $name must be a whole number from 0 to $max, got \"$value\"")
    }
    return digits.toInt()
}

/** `/upstream`'s client modes. */
enum class UpstreamClient(val label: String) {
    POOLED("pooled"),
    PER_CALL("per-call");

    companion object {
        /** Absent is pooled; anything but the two labels is a 400. */
        fun of(raw: String?): UpstreamClient = when (raw) {
            null, "pooled" -> POOLED
            "per-call" -> PER_CALL
            else -> throw BadRequest("query parameter client must be pooled or per-call, got \"$raw\"")
        }
    }
}

/** An upstream call that failed or answered non-2xx: the target answers 502. */
class UpstreamFailure(message: String) : RuntimeException(message)

/** The first [n] numbers of the contract's 31-bit linear congruential generator. */
fun compute(n: Int): LongArray {
    val numbers = LongArray(n)
    var x = 42L
    for (i in 0 until n) {
        x = (1103515245L * x + 12345L) and 0x7fffffffL
        numbers[i] = x
    }
    return numbers
}

/** `/bytes`'s source, built once at startup: byte i is 'a' + i % 26; responses slice it. */
val PAYLOAD: ByteArray = ByteArray(Limits.BYTES_N) { ('a'.code + it % 26).toByte() }

/** An IMF-fixdate for a Date header, formatted at most once a second (any thread). */
object HttpDate {
    private class Stamp(val second: Long, val text: String)

    /** Two-digit day: RFC_1123_DATE_TIME would print "6 Nov". */
    private val format = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.ENGLISH)

    @Volatile
    private var stamp = Stamp(-1, "")

    fun now(): String {
        val second = System.currentTimeMillis() / 1000
        val current = stamp
        if (current.second == second) {
            return current.text
        }
        val text = format.format(ZonedDateTime.now(ZoneOffset.UTC))
        stamp = Stamp(second, text)
        return text
    }
}

/** Start-up steps every Kotlin target takes the same way. */
object Startup {
    /** The contract's environment, checked (a bad variable exits with status 2 and its fix). */
    fun config(): Config = Config.fromEnv(System.getenv())

    /** The portfolio, rendered once; missing content exits with status 2. */
    fun portfolio(config: Config): Portfolio = try {
        Portfolio(Path.of(config.contentDir()))
    } catch (e: Exception) {
        fail("CONTENT_DIR=${config.contentDir()}: cannot load the portfolio content: $e (point CONTENT_DIR at targets/content)")
    }

    /** The contract's first stdout line, once the socket is bound. */
    fun announce(config: Config, port: Int) {
        val host = if (config.host().contains(':')) "[${config.host()}]" else config.host()
        println("listening on $host:$port")
        System.out.flush()
    }

    /** Binding failed: say so and exit with status 2. */
    fun cannotListen(config: Config, error: Throwable): Nothing =
        fail("cannot listen on ${config.host()}:${config.port()}: $error (pick another PORT or HOST)")

    fun fail(message: String): Nothing {
        Config.fail(message)
        throw IllegalStateException(message) // not reached: Config.fail exits
    }
}
