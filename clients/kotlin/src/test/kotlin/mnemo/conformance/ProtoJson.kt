package mnemo.conformance

import com.google.protobuf.ByteString
import com.google.protobuf.CodedInputStream
import com.google.protobuf.CodedOutputStream
import java.io.ByteArrayOutputStream
import java.math.BigDecimal
import java.math.BigInteger
import java.time.Instant
import java.time.OffsetDateTime
import java.time.format.DateTimeFormatter
import java.util.Base64

/** A request that is not the message it should be (a field, value or type that does not fit). */
class ProtoJsonException(message: String) : Exception(message)

/**
 * The canonical proto3 JSON mapping over the binary wire format, driven by [Descriptors]
 * (the lite runtime has neither reflection nor JsonFormat): [encode] a JSON object into a
 * message's bytes, [decode] bytes into JSON without default values (int64 as strings, enums
 * by name, bytes in base64, and the well-known types' own forms: Timestamp as RFC 3339,
 * Duration as `1.5s`, FieldMask as `a,bC`, Struct/Value/ListValue as JSON, wrappers as
 * their value, Empty as `{}`). Unknown fields are skipped on decode.
 */
class ProtoJson(private val descriptors: Descriptors) {
    // ------------------------------------------------------------------ encode

    fun encode(typeName: String, json: Any?): ByteArray {
        val bytes = ByteArrayOutputStream()
        val out = CodedOutputStream.newInstance(bytes)
        encodeInto(descriptors.message(typeName), json, out)
        out.flush()
        return bytes.toByteArray()
    }

    private fun encodeInto(type: Descriptors.MessageType, json: Any?, out: CodedOutputStream) {
        if (wellKnown(type.fullName, json, out)) return
        val fields = json as? Map<*, *> ?: throw ProtoJsonException("${type.fullName}: expected an object, got ${Json.write(json)}")
        for ((key, value) in fields) {
            val field = type.byJsonName[key as String] ?: throw ProtoJsonException("${type.fullName} has no field $key")
            if (value == null && field.typeName != "google.protobuf.Value") continue
            when {
                field.repeated && isMap(field) -> {
                    val entries = value as? Map<*, *> ?: throw ProtoJsonException("$key: expected an object")
                    val entryType = descriptors.message(field.typeName)
                    for ((k, v) in entries) {
                        val entry = LinkedHashMap<String, Any?>()
                        entry[entryType.byNumber.getValue(1).jsonName] = k
                        entry[entryType.byNumber.getValue(2).jsonName] = v
                        out.writeByteArray(field.number, encode(entryType.fullName, entry))
                    }
                }
                field.repeated -> {
                    val items = value as? List<*> ?: throw ProtoJsonException("$key: expected an array")
                    for (item in items) encodeValue(field, item, out)
                }
                else -> encodeValue(field, value, out)
            }
        }
    }

    private fun isMap(field: Descriptors.Field): Boolean =
        field.type == "TYPE_MESSAGE" && descriptors.messages[field.typeName]?.mapEntry == true

    private fun encodeValue(field: Descriptors.Field, value: Any?, out: CodedOutputStream) {
        val n = field.number
        try {
            when (field.type) {
                "TYPE_DOUBLE" -> out.writeDouble(n, floating(value))
                "TYPE_FLOAT" -> out.writeFloat(n, floating(value).toFloat())
                "TYPE_INT64" -> out.writeInt64(n, integer(value).toLong())
                "TYPE_UINT64" -> out.writeUInt64(n, integer(value).toLong())
                "TYPE_INT32" -> out.writeInt32(n, integer(value).intValueExact())
                "TYPE_UINT32" -> out.writeUInt32(n, integer(value).toInt())
                "TYPE_SINT32" -> out.writeSInt32(n, integer(value).intValueExact())
                "TYPE_SINT64" -> out.writeSInt64(n, integer(value).toLong())
                "TYPE_FIXED32" -> out.writeFixed32(n, integer(value).toInt())
                "TYPE_FIXED64" -> out.writeFixed64(n, integer(value).toLong())
                "TYPE_SFIXED32" -> out.writeSFixed32(n, integer(value).intValueExact())
                "TYPE_SFIXED64" -> out.writeSFixed64(n, integer(value).toLong())
                "TYPE_BOOL" -> out.writeBool(n, value as? Boolean ?: throw ProtoJsonException("expected true or false"))
                "TYPE_STRING" -> out.writeString(n, value as? String ?: throw ProtoJsonException("expected a string"))
                "TYPE_BYTES" -> out.writeByteArray(n, base64(value))
                "TYPE_ENUM" -> out.writeEnum(n, enumNumber(field.typeName, value))
                "TYPE_MESSAGE" -> out.writeByteArray(n, encode(field.typeName, value))
                else -> throw ProtoJsonException("unsupported field type ${field.type}")
            }
        } catch (e: ProtoJsonException) {
            throw ProtoJsonException("${field.jsonName}: ${e.message}")
        } catch (e: ArithmeticException) {
            throw ProtoJsonException("${field.jsonName}: ${Json.write(value)} is out of range")
        }
    }

    private fun floating(value: Any?): Double = when (value) {
        is BigDecimal -> value.toDouble()
        "NaN" -> Double.NaN
        "Infinity" -> Double.POSITIVE_INFINITY
        "-Infinity" -> Double.NEGATIVE_INFINITY
        is String -> value.toBigDecimalOrNull()?.toDouble() ?: throw ProtoJsonException("expected a number, got \"$value\"")
        else -> throw ProtoJsonException("expected a number, got ${Json.write(value)}")
    }

    private fun integer(value: Any?): BigInteger {
        val number = when (value) {
            is BigDecimal -> value
            is String -> value.toBigDecimalOrNull() ?: throw ProtoJsonException("expected an integer, got \"$value\"")
            else -> throw ProtoJsonException("expected an integer, got ${Json.write(value)}")
        }
        return try {
            number.toBigIntegerExact()
        } catch (e: ArithmeticException) {
            throw ProtoJsonException("expected an integer, got ${number.toPlainString()}")
        }
    }

    private fun base64(value: Any?): ByteArray {
        val text = value as? String ?: throw ProtoJsonException("expected a base64 string")
        return try {
            if (text.contains('-') || text.contains('_')) Base64.getUrlDecoder().decode(text) else Base64.getDecoder().decode(text)
        } catch (e: IllegalArgumentException) {
            throw ProtoJsonException("not base64: \"$text\"")
        }
    }

    private fun enumNumber(typeName: String, value: Any?): Int = when (value) {
        is String -> descriptors.enum(typeName).byName[value] ?: throw ProtoJsonException("$typeName has no value $value")
        is BigDecimal -> value.intValueExact()
        else -> throw ProtoJsonException("expected an enum name, got ${Json.write(value)}")
    }

    /** Writes a well-known type from its special JSON form; false for any other type. */
    private fun wellKnown(typeName: String, json: Any?, out: CodedOutputStream): Boolean {
        when (typeName) {
            "google.protobuf.Timestamp" -> {
                val text = json as? String ?: throw ProtoJsonException("Timestamp: expected an RFC 3339 string")
                val instant = try {
                    OffsetDateTime.parse(text, DateTimeFormatter.ISO_OFFSET_DATE_TIME).toInstant()
                } catch (e: java.time.format.DateTimeParseException) {
                    throw ProtoJsonException("Timestamp: not RFC 3339: \"$text\"")
                }
                if (instant.epochSecond != 0L) out.writeInt64(1, instant.epochSecond)
                if (instant.nano != 0) out.writeInt32(2, instant.nano)
            }
            "google.protobuf.Duration" -> {
                val text = json as? String ?: throw ProtoJsonException("Duration: expected a string like \"1.5s\"")
                val number = text.removeSuffix("s").takeIf { text.endsWith("s") }?.toBigDecimalOrNull()
                    ?: throw ProtoJsonException("Duration: not like \"1.5s\": \"$text\"")
                val seconds = number.toBigInteger().toLong()
                val nanos = number.subtract(BigDecimal(seconds)).movePointRight(9).toInt()
                if (seconds != 0L) out.writeInt64(1, seconds)
                if (nanos != 0) out.writeInt32(2, nanos)
            }
            "google.protobuf.FieldMask" -> {
                val text = json as? String ?: throw ProtoJsonException("FieldMask: expected a string")
                text.split(',').filter { it.isNotEmpty() }.forEach { out.writeString(1, snakeCase(it)) }
            }
            "google.protobuf.Struct" -> {
                val fields = json as? Map<*, *> ?: throw ProtoJsonException("Struct: expected an object")
                for ((k, v) in fields) {
                    val entry = ByteArrayOutputStream()
                    val entryOut = CodedOutputStream.newInstance(entry)
                    entryOut.writeString(1, k as String)
                    entryOut.writeByteArray(2, encode("google.protobuf.Value", v))
                    entryOut.flush()
                    out.writeByteArray(1, entry.toByteArray())
                }
            }
            "google.protobuf.Value" -> when (json) {
                null -> out.writeEnum(1, 0)
                is BigDecimal -> out.writeDouble(2, json.toDouble())
                is String -> out.writeString(3, json)
                is Boolean -> out.writeBool(4, json)
                is Map<*, *> -> out.writeByteArray(5, encode("google.protobuf.Struct", json))
                is List<*> -> out.writeByteArray(6, encode("google.protobuf.ListValue", json))
                else -> throw ProtoJsonException("Value: unsupported ${Json.write(json)}")
            }
            "google.protobuf.ListValue" -> {
                val items = json as? List<*> ?: throw ProtoJsonException("ListValue: expected an array")
                items.forEach { out.writeByteArray(1, encode("google.protobuf.Value", it)) }
            }
            "google.protobuf.Empty" -> Unit
            in WRAPPERS -> {
                val inner = descriptors.message(typeName).byNumber.getValue(1)
                encodeValue(inner, json, out)
            }
            else -> return false
        }
        return true
    }

    // ------------------------------------------------------------------ decode

    fun decode(typeName: String, bytes: ByteArray): Any? = decodeMessage(descriptors.message(typeName), bytes)

    private sealed interface Raw {
        data class Varint(val value: Long) : Raw
        data class Fixed64(val value: Long) : Raw
        data class Fixed32(val value: Int) : Raw
        data class Bytes(val value: ByteString) : Raw
    }

    private fun readFields(bytes: ByteArray): Map<Int, List<Raw>> {
        val input = CodedInputStream.newInstance(bytes)
        val out = LinkedHashMap<Int, MutableList<Raw>>()
        while (true) {
            val tag = input.readTag()
            if (tag == 0) break
            val raw = when (tag and 7) {
                0 -> Raw.Varint(input.readInt64())
                1 -> Raw.Fixed64(input.readFixed64())
                2 -> Raw.Bytes(input.readBytes())
                5 -> Raw.Fixed32(input.readFixed32())
                else -> {
                    input.skipField(tag)
                    continue
                }
            }
            out.getOrPut(tag ushr 3) { ArrayList() }.add(raw)
        }
        return out
    }

    private fun decodeMessage(type: Descriptors.MessageType, bytes: ByteArray): Any? {
        val raw = readFields(bytes)
        decodeWellKnown(type, raw)?.let { return it.value }
        val out = LinkedHashMap<String, Any?>()
        for (field in type.fields.sortedBy { it.number }) {
            val values = raw[field.number] ?: continue
            when {
                field.repeated && isMap(field) -> {
                    val entryType = descriptors.message(field.typeName)
                    val map = LinkedHashMap<String, Any?>()
                    for (entry in values) {
                        val fields = readFields((entry as Raw.Bytes).value.toByteArray())
                        val keyField = entryType.byNumber.getValue(1)
                        val valueField = entryType.byNumber.getValue(2)
                        val key = fields[1]?.let { scalars(keyField, it).last() } ?: default(keyField)
                        val value = fields[2]?.let { decodeSingle(valueField, it) } ?: default(valueField)
                        map[key.toString()] = value
                    }
                    if (map.isNotEmpty()) out[field.jsonName] = map
                }
                field.repeated -> {
                    val items = if (field.type == "TYPE_MESSAGE") {
                        values.map { decode(field.typeName, (it as Raw.Bytes).value.toByteArray()) }
                    } else {
                        scalars(field, values)
                    }
                    if (items.isNotEmpty()) out[field.jsonName] = items
                }
                else -> {
                    val value = decodeSingle(field, values)
                    if (field.type == "TYPE_MESSAGE" || field.hasPresence || !isDefault(field, value)) out[field.jsonName] = value
                }
            }
        }
        return out
    }

    /** A singular field: the last value; a message's occurrences are merged (their bytes concatenated). */
    private fun decodeSingle(field: Descriptors.Field, values: List<Raw>): Any? =
        if (field.type == "TYPE_MESSAGE") {
            val merged = ByteArrayOutputStream()
            values.forEach { (it as Raw.Bytes).value.writeTo(merged) }
            decode(field.typeName, merged.toByteArray())
        } else {
            scalars(field, values).last()
        }

    /** Every scalar of [values], unpacking packed ones. */
    private fun scalars(field: Descriptors.Field, values: List<Raw>): List<Any?> {
        val out = ArrayList<Any?>()
        for (raw in values) {
            if (raw is Raw.Bytes && field.type != "TYPE_STRING" && field.type != "TYPE_BYTES") {
                val input = CodedInputStream.newInstance(raw.value.toByteArray())
                while (!input.isAtEnd) {
                    out += scalar(
                        field,
                        when (field.type) {
                            "TYPE_DOUBLE", "TYPE_FIXED64", "TYPE_SFIXED64" -> Raw.Fixed64(input.readFixed64())
                            "TYPE_FLOAT", "TYPE_FIXED32", "TYPE_SFIXED32" -> Raw.Fixed32(input.readFixed32())
                            else -> Raw.Varint(input.readInt64())
                        },
                    )
                }
            } else {
                out += scalar(field, raw)
            }
        }
        return out
    }

    private fun scalar(field: Descriptors.Field, raw: Raw): Any? = when (field.type) {
        "TYPE_DOUBLE" -> number(java.lang.Double.longBitsToDouble((raw as Raw.Fixed64).value))
        "TYPE_FLOAT" -> number(java.lang.Float.intBitsToFloat((raw as Raw.Fixed32).value).toDouble())
        "TYPE_INT64" -> (raw as Raw.Varint).value.toString()
        "TYPE_UINT64" -> java.lang.Long.toUnsignedString((raw as Raw.Varint).value)
        "TYPE_SINT64" -> CodedInputStream.decodeZigZag64((raw as Raw.Varint).value).toString()
        "TYPE_FIXED64" -> java.lang.Long.toUnsignedString((raw as Raw.Fixed64).value)
        "TYPE_SFIXED64" -> (raw as Raw.Fixed64).value.toString()
        "TYPE_INT32" -> BigDecimal((raw as Raw.Varint).value.toInt())
        "TYPE_UINT32" -> BigDecimal(Integer.toUnsignedLong((raw as Raw.Varint).value.toInt()))
        "TYPE_SINT32" -> BigDecimal(CodedInputStream.decodeZigZag32((raw as Raw.Varint).value.toInt()))
        "TYPE_FIXED32" -> BigDecimal(Integer.toUnsignedLong((raw as Raw.Fixed32).value))
        "TYPE_SFIXED32" -> BigDecimal((raw as Raw.Fixed32).value)
        "TYPE_BOOL" -> (raw as Raw.Varint).value != 0L
        "TYPE_STRING" -> (raw as Raw.Bytes).value.toStringUtf8()
        "TYPE_BYTES" -> Base64.getEncoder().encodeToString((raw as Raw.Bytes).value.toByteArray())
        "TYPE_ENUM" -> {
            val number = (raw as Raw.Varint).value.toInt()
            descriptors.enum(field.typeName).byNumber[number] ?: BigDecimal(number)
        }
        else -> throw ProtoJsonException("unsupported field type ${field.type}")
    }

    private fun number(value: Double): Any = when {
        value.isNaN() -> "NaN"
        value == Double.POSITIVE_INFINITY -> "Infinity"
        value == Double.NEGATIVE_INFINITY -> "-Infinity"
        else -> BigDecimal(value.toString())
    }

    private fun default(field: Descriptors.Field): Any? = when (field.type) {
        "TYPE_MESSAGE" -> decode(field.typeName, ByteArray(0))
        "TYPE_STRING", "TYPE_BYTES" -> ""
        "TYPE_BOOL" -> false
        "TYPE_ENUM" -> descriptors.enum(field.typeName).byNumber[0] ?: BigDecimal.ZERO
        "TYPE_INT64", "TYPE_UINT64", "TYPE_SINT64", "TYPE_FIXED64", "TYPE_SFIXED64" -> "0"
        else -> BigDecimal.ZERO
    }

    private fun isDefault(field: Descriptors.Field, value: Any?): Boolean {
        val zero = default(field)
        return if (value is BigDecimal && zero is BigDecimal) value.compareTo(zero) == 0 else value == zero
    }

    private class Decoded(val value: Any?)

    /** A well-known type's special JSON form; null for any other type. */
    private fun decodeWellKnown(type: Descriptors.MessageType, raw: Map<Int, List<Raw>>): Decoded? {
        fun long(n: Int): Long = (raw[n]?.last() as Raw.Varint?)?.value ?: 0L
        return when (type.fullName) {
            "google.protobuf.Timestamp" -> Decoded(timestamp(long(1), long(2).toInt()))
            "google.protobuf.Duration" -> Decoded(duration(long(1), long(2).toInt()))
            "google.protobuf.FieldMask" ->
                Decoded(raw[1].orEmpty().joinToString(",") { lowerCamel((it as Raw.Bytes).value.toStringUtf8()) })
            "google.protobuf.Struct" -> {
                val out = LinkedHashMap<String, Any?>()
                for (entry in raw[1].orEmpty()) {
                    val fields = readFields((entry as Raw.Bytes).value.toByteArray())
                    val key = (fields[1]?.last() as Raw.Bytes?)?.value?.toStringUtf8() ?: ""
                    out[key] = fields[2]?.let { decode("google.protobuf.Value", concat(it)) }
                }
                Decoded(out)
            }
            "google.protobuf.Value" -> {
                val (number, last) = raw.entries.lastOrNull()?.let { it.key to it.value.last() } ?: return Decoded(null)
                Decoded(
                    when (number) {
                        2 -> number(java.lang.Double.longBitsToDouble((last as Raw.Fixed64).value))
                        3 -> (last as Raw.Bytes).value.toStringUtf8()
                        4 -> (last as Raw.Varint).value != 0L
                        5 -> decode("google.protobuf.Struct", (last as Raw.Bytes).value.toByteArray())
                        6 -> decode("google.protobuf.ListValue", (last as Raw.Bytes).value.toByteArray())
                        else -> null
                    },
                )
            }
            "google.protobuf.ListValue" ->
                Decoded(raw[1].orEmpty().map { decode("google.protobuf.Value", (it as Raw.Bytes).value.toByteArray()) })
            "google.protobuf.Empty" -> Decoded(LinkedHashMap<String, Any?>())
            in WRAPPERS -> {
                val inner = type.byNumber.getValue(1)
                Decoded(raw[1]?.let { scalars(inner, it).last() } ?: default(inner))
            }
            else -> null
        }
    }

    private fun concat(values: List<Raw>): ByteArray {
        val out = ByteArrayOutputStream()
        values.forEach { (it as Raw.Bytes).value.writeTo(out) }
        return out.toByteArray()
    }

    companion object {
        private val WRAPPERS = setOf(
            "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
            "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
            "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
        )

        private val SECONDS = DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss")

        /** RFC 3339 in UTC with 0, 3, 6 or 9 fractional digits, as protobuf prints it. */
        fun timestamp(seconds: Long, nanos: Int): String {
            val base = SECONDS.format(Instant.ofEpochSecond(seconds).atOffset(java.time.ZoneOffset.UTC))
            return base + fraction(nanos) + "Z"
        }

        fun duration(seconds: Long, nanos: Int): String {
            val negative = seconds < 0 || nanos < 0
            val text = "${Math.abs(seconds)}${fraction(Math.abs(nanos))}s"
            return if (negative) "-$text" else text
        }

        private fun fraction(nanos: Int): String = when {
            nanos == 0 -> ""
            nanos % 1_000_000 == 0 -> ".%03d".format(nanos / 1_000_000)
            nanos % 1_000 == 0 -> ".%06d".format(nanos / 1_000)
            else -> ".%09d".format(nanos)
        }

        fun snakeCase(path: String): String = path.replace(Regex("[A-Z]")) { "_" + it.value.lowercase() }

        fun lowerCamel(path: String): String = path.replace(Regex("_([a-z0-9])")) { it.groupValues[1].uppercase() }
    }
}
