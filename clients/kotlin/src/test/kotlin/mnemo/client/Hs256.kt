package mnemo.client

import java.nio.file.Files
import java.nio.file.Path
import java.security.SecureRandom
import java.util.Base64
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/**
 * HS256 JWTs for tests (as tests/support/tokens.py and the TypeScript tests make them): a
 * fresh secret per server, which verifies them with `--auth jwt --jwt-hs256-secret-file F
 * --jwt-audience mnemo-test`.
 */
class Hs256Keys {
    private val secret: ByteArray = Base64.getUrlEncoder().withoutPadding()
        .encode(ByteArray(48).also { SecureRandom().nextBytes(it) })

    /** The `serve` flags of a server verifying these keys' tokens; writes the secret into [dir]. */
    fun serverArgs(dir: Path): List<String> {
        val file = dir.resolve("jwt.secret")
        Files.write(file, secret)
        return listOf("--auth", "jwt", "--jwt-hs256-secret-file", file.toString(), "--jwt-audience", AUDIENCE)
    }

    /** A valid token for [sub] (expires in 5 minutes). */
    fun token(sub: String): String {
        val now = System.currentTimeMillis() / 1000
        val payload = """{"sub":"$sub","aud":"$AUDIENCE","iat":$now,"exp":${now + 300}}"""
        val unsigned = "${b64("""{"alg":"HS256","typ":"JWT"}""".toByteArray())}.${b64(payload.toByteArray())}"
        val mac = Mac.getInstance("HmacSHA256").apply { init(SecretKeySpec(secret, "HmacSHA256")) }
        return "$unsigned.${b64(mac.doFinal(unsigned.toByteArray()))}"
    }

    private fun b64(data: ByteArray) = Base64.getUrlEncoder().withoutPadding().encodeToString(data)

    companion object {
        const val AUDIENCE = "mnemo-test"
    }
}
