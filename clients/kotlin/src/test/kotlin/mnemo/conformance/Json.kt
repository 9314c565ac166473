package mnemo.conformance

import com.squareup.moshi.JsonReader
import okio.Buffer
import java.math.BigDecimal

/**
 * JSON as plain values: `Map<String, Any?>` (insertion-ordered), `List<Any?>`, `String`,
 * [BigDecimal] (every number, exactly as written), `Boolean` and `null`. Read with Moshi's
 * streaming reader (numbers are taken as their text, so int64 values keep every digit).
 */
object Json {
    fun parse(text: String): Any? {
        val reader = JsonReader.of(Buffer().writeUtf8(text))
        val value = read(reader)
        if (reader.peek() != JsonReader.Token.END_DOCUMENT) throw IllegalArgumentException("trailing data after the JSON value")
        return value
    }

    private fun read(reader: JsonReader): Any? = when (reader.peek()) {
        JsonReader.Token.BEGIN_OBJECT -> {
            val out = LinkedHashMap<String, Any?>()
            reader.beginObject()
            while (reader.hasNext()) out[reader.nextName()] = read(reader)
            reader.endObject()
            out
        }
        JsonReader.Token.BEGIN_ARRAY -> {
            val out = ArrayList<Any?>()
            reader.beginArray()
            while (reader.hasNext()) out += read(reader)
            reader.endArray()
            out
        }
        JsonReader.Token.STRING -> reader.nextString()
        JsonReader.Token.NUMBER -> BigDecimal(reader.nextString())
        JsonReader.Token.BOOLEAN -> reader.nextBoolean()
        JsonReader.Token.NULL -> reader.nextNull<Any>()
        else -> throw IllegalArgumentException("unexpected ${reader.peek()} at ${reader.path}")
    }

    /** Compact JSON text with sorted keys (for messages). */
    fun write(value: Any?): String = StringBuilder().also { write(value, it) }.toString()

    private fun write(value: Any?, out: StringBuilder) {
        when (value) {
            null -> out.append("null")
            is String -> quote(value, out)
            is BigDecimal -> out.append(value.toPlainStringIfSmall())
            is Number, is Boolean -> out.append(value.toString())
            is Map<*, *> -> {
                out.append('{')
                value.entries.sortedBy { it.key.toString() }.forEachIndexed { i, (k, v) ->
                    if (i > 0) out.append(", ")
                    quote(k.toString(), out)
                    out.append(": ")
                    write(v, out)
                }
                out.append('}')
            }
            is List<*> -> {
                out.append('[')
                value.forEachIndexed { i, v ->
                    if (i > 0) out.append(", ")
                    write(v, out)
                }
                out.append(']')
            }
            else -> quote(value.toString(), out)
        }
    }

    private fun quote(text: String, out: StringBuilder) {
        out.append('"')
        for (c in text) {
            when {
                c == '"' -> out.append("\\\"")
                c == '\\' -> out.append("\\\\")
                c == '\n' -> out.append("\\n")
                c == '\r' -> out.append("\\r")
                c == '\t' -> out.append("\\t")
                c < ' ' -> out.append(String.format("\\u%04x", c.code))
                else -> out.append(c)
            }
        }
        out.append('"')
    }
}

/** The decimal text of a number, without an exponent unless it is very large or small. */
fun BigDecimal.toPlainStringIfSmall(): String {
    val stripped = if (signum() == 0) BigDecimal.ZERO else stripTrailingZeros()
    return if (stripped.scale() in -20..20) stripped.toPlainString() else stripped.toString()
}
