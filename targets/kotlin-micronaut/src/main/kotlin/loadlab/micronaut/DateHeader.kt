package loadlab.micronaut

import io.micronaut.http.MutableHttpResponse
import io.micronaut.http.annotation.ResponseFilter
import io.micronaut.http.annotation.ServerFilter
import loadlab.kotlincommon.HttpDate

/**
 * The contract's Date header (an IMF-fixdate, RFC 9110 5.6.7) on every response, error routes
 * included. Micronaut's own formats with RFC_1123_DATE_TIME, whose day has one digit on the
 * 1st to the 9th of a month ("Mon, 7 Dec 2026"): not an IMF-fixdate, so `lab verify` failed
 * on those days only. Micronaut adds its own only where no Date header is set.
 */
@ServerFilter(ServerFilter.MATCH_ALL_PATTERN)
class DateHeader {
    @ResponseFilter
    fun date(response: MutableHttpResponse<*>) {
        response.headers.set("Date", HttpDate.now())
    }
}
