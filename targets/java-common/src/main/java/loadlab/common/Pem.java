package loadlab.common;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The contract's PEM files (TLS_CERT, TLS_KEY, UPSTREAM_CA) as the JDK's key stores, for the
 * frameworks that take only a {@link KeyStore} or an {@link SSLContext} (Ktor). The JDK reads
 * certificates from PEM but not keys: a PKCS#8 key ("BEGIN PRIVATE KEY") is decoded here. No
 * framework code: the targets that can hand PEM files to their framework do so.
 */
public final class Pem {
    /** The password of the in-memory key stores made here (never written anywhere). */
    public static final char[] PASSWORD = "loadlab".toCharArray();
    /** The alias of the server's key entry in {@link #keyStore}. */
    public static final String ALIAS = "server";

    private static final Pattern KEY = Pattern.compile(
            "-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");

    private Pem() {}

    /** A key store holding the server's key and certificate chain under {@link #ALIAS}. */
    public static KeyStore keyStore(String certPath, String keyPath) throws Exception {
        List<Certificate> chain = certificates(certPath);
        if (chain.isEmpty()) {
            throw new GeneralSecurityException(certPath + " holds no PEM certificate");
        }
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry(ALIAS, privateKey(keyPath), PASSWORD, chain.toArray(new Certificate[0]));
        return store;
    }

    /** A new client TLS context that trusts the CA certificates of caPath only. */
    public static SSLContext clientContext(String caPath) throws Exception {
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        List<Certificate> certificates = certificates(caPath);
        for (int i = 0; i < certificates.size(); i++) {
            trusted.setCertificateEntry("ca-" + i, certificates.get(i));
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        return context;
    }

    private static List<Certificate> certificates(String path) throws Exception {
        byte[] bytes = Files.readAllBytes(Path.of(path));
        return new ArrayList<>(CertificateFactory.getInstance("X.509")
                .generateCertificates(new ByteArrayInputStream(bytes)));
    }

    /** A PKCS#8 private key: EC (what rcgen and the contract use), RSA or Ed25519. */
    private static PrivateKey privateKey(String path) throws Exception {
        Matcher pem = KEY.matcher(Files.readString(Path.of(path), StandardCharsets.US_ASCII));
        if (!pem.find()) {
            throw new GeneralSecurityException(path + " holds no PEM PKCS#8 key (\"BEGIN PRIVATE KEY\")");
        }
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getMimeDecoder().decode(pem.group(1)));
        GeneralSecurityException last = null;
        for (String algorithm : new String[] {"EC", "RSA", "Ed25519"}) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(spec);
            } catch (GeneralSecurityException e) {
                last = e;
            }
        }
        throw new GeneralSecurityException(path + ": not an EC, RSA or Ed25519 PKCS#8 key", last);
    }
}
