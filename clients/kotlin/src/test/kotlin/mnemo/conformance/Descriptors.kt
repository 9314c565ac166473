package mnemo.conformance

/**
 * The message, enum and service descriptors of mnemo.v1 and its imports, read from the
 * descriptor set `make gen` writes (`buf build` as JSON: the FileDescriptorSet in proto3
 * JSON), since the lite runtime has no descriptors of its own.
 */
class Descriptors private constructor(
    val messages: Map<String, MessageType>,
    val enums: Map<String, EnumType>,
    val methods: Map<String, MethodType>,
) {
    class Field(
        val name: String,
        val jsonName: String,
        val number: Int,
        val type: String,
        val typeName: String,
        val repeated: Boolean,
        /** In a oneof (a proto3 `optional` too): a default value is still sent and printed. */
        val hasPresence: Boolean,
    )

    class MessageType(val fullName: String, val fields: List<Field>, val mapEntry: Boolean) {
        val byNumber: Map<Int, Field> = fields.associateBy { it.number }
        val byJsonName: Map<String, Field> = fields.associateBy { it.jsonName } + fields.associateBy { it.name }
    }

    class EnumType(val fullName: String, val byName: Map<String, Int>) {
        val byNumber: Map<Int, String> = byName.entries.associate { (k, v) -> v to k }
    }

    /** `mnemo.v1.Service/Method`. */
    class MethodType(val path: String, val input: String, val output: String, val clientStreaming: Boolean, val serverStreaming: Boolean)

    fun message(name: String): MessageType = messages[name.removePrefix(".")] ?: throw IllegalArgumentException("no message $name")

    fun enum(name: String): EnumType = enums[name.removePrefix(".")] ?: throw IllegalArgumentException("no enum $name")

    companion object {
        /** The descriptor set on the classpath (`mnemo-descriptors.json`, from `make gen`). */
        fun load(): Descriptors {
            val stream = Descriptors::class.java.getResourceAsStream("/mnemo-descriptors.json")
                ?: error("mnemo-descriptors.json is not on the classpath; run make gen")
            return parse(stream.use { it.readBytes().decodeToString() })
        }

        @Suppress("UNCHECKED_CAST")
        fun parse(text: String): Descriptors {
            val messages = HashMap<String, MessageType>()
            val enums = HashMap<String, EnumType>()
            val methods = HashMap<String, MethodType>()
            val root = Json.parse(text) as Map<String, Any?>
            for (file in root["file"] as List<Map<String, Any?>>) {
                val pkg = file["package"] as String? ?: ""
                val prefix = if (pkg.isEmpty()) "" else "$pkg."
                list(file, "enumType").forEach { addEnum(prefix, it, enums) }
                list(file, "messageType").forEach { addMessage(prefix, it, messages, enums) }
                for (service in list(file, "service")) {
                    for (method in list(service, "method")) {
                        val path = "$prefix${service["name"]}/${method["name"]}"
                        methods[path] = MethodType(
                            path,
                            (method["inputType"] as String).removePrefix("."),
                            (method["outputType"] as String).removePrefix("."),
                            method["clientStreaming"] == true,
                            method["serverStreaming"] == true,
                        )
                    }
                }
            }
            return Descriptors(messages, enums, methods)
        }

        @Suppress("UNCHECKED_CAST")
        private fun list(node: Map<String, Any?>, key: String): List<Map<String, Any?>> =
            (node[key] as List<Map<String, Any?>>?) ?: emptyList()

        private fun addEnum(prefix: String, node: Map<String, Any?>, enums: MutableMap<String, EnumType>) {
            val name = "$prefix${node["name"]}"
            enums[name] = EnumType(name, list(node, "value").associate { it["name"] as String to (it["number"] as Number).toInt() })
        }

        @Suppress("UNCHECKED_CAST")
        private fun addMessage(
            prefix: String,
            node: Map<String, Any?>,
            messages: MutableMap<String, MessageType>,
            enums: MutableMap<String, EnumType>,
        ) {
            val name = "$prefix${node["name"]}"
            val fields = list(node, "field").map {
                Field(
                    name = it["name"] as String,
                    jsonName = it["jsonName"] as String? ?: it["name"] as String,
                    number = (it["number"] as Number).toInt(),
                    type = it["type"] as String,
                    typeName = (it["typeName"] as String? ?: "").removePrefix("."),
                    repeated = it["label"] == "LABEL_REPEATED",
                    hasPresence = it.containsKey("oneofIndex") || it["proto3Optional"] == true,
                )
            }
            val options = node["options"] as Map<String, Any?>?
            messages[name] = MessageType(name, fields, options?.get("mapEntry") == true)
            list(node, "enumType").forEach { addEnum("$name.", it, enums) }
            list(node, "nestedType").forEach { addMessage("$name.", it, messages, enums) }
        }
    }
}
