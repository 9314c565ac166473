package mnemo.conformance

import com.google.protobuf.ByteString
import com.google.protobuf.Timestamp
import mnemo.v1.AppendMessagesRequest
import mnemo.v1.Checkpoint
import mnemo.v1.Document
import mnemo.v1.Embedding
import mnemo.v1.MemoryScope
import mnemo.v1.UpdateMemoryRequest
import org.junit.jupiter.api.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith

/**
 * The runner's JSON <-> binary conversion against the generated lite classes (the ground
 * truth of the wire format): what [ProtoJson.encode] writes parses into the expected
 * message, and what a message serializes to decodes to canonical proto3 JSON.
 */
class ProtoJsonTest {
    private val json = ProtoJson(Descriptors.load())

    @Test
    fun wellKnownTypesScalarsAndMapsEncode() {
        val request = AppendMessagesRequest.parseFrom(
            json.encode(
                "mnemo.v1.AppendMessagesRequest",
                Json.parse(
                    """{"conversation": "users/u/conversations/c", "expectedPosition": "9007199254740993", "turn": 3,
                        "metadata": {"a": [1, "x", null, {"b": true}]},
                        "messages": [{"role": "user", "createTime": "2026-01-02T03:04:05.120Z"}]}""",
                ),
            ),
        )
        assertEquals(9007199254740993L, request.expectedPosition)
        assertEquals(3, request.turn)
        val list = request.metadata.fieldsMap.getValue("a").listValue.valuesList
        assertEquals(listOf(1.0, "x", true), listOf(list[0].numberValue, list[1].stringValue, list[3].structValue.fieldsMap.getValue("b").boolValue))
        val time = request.messagesList.single().createTime
        assertEquals(Timestamp.newBuilder().setSeconds(1767323045).setNanos(120_000_000).build(), time)

        val update = UpdateMemoryRequest.parseFrom(
            json.encode(
                "mnemo.v1.UpdateMemoryRequest",
                Json.parse("""{"memory": {"scope": "MEMORY_SCOPE_CONVERSATION", "metadata": {"k": "v"}}, "updateMask": "text,metadata,originConversation"}"""),
            ),
        )
        assertEquals(MemoryScope.MEMORY_SCOPE_CONVERSATION, update.memory.scope)
        assertEquals(mapOf("k" to "v"), update.memory.metadataMap)
        assertEquals(listOf("text", "metadata", "origin_conversation"), update.updateMask.pathsList)

        assertFailsWith<ProtoJsonException> { json.encode("mnemo.v1.UpdateMemoryRequest", Json.parse("""{"nope": 1}""")) }
        assertFailsWith<ProtoJsonException> { json.encode("mnemo.v1.Memory", Json.parse("""{"scope": "MEMORY_SCOPE_NONE"}""")) }
    }

    @Test
    fun decodesCanonicalJsonWithoutDefaults() {
        val document = Document.newBuilder()
            .setName("users/u/documents/d").addNamespace("a").addNamespace("b")
            .setTtl(com.google.protobuf.Duration.newBuilder().setSeconds(90).setNanos(500_000_000))
            .setCreateTime(Timestamp.newBuilder().setSeconds(1767323045))
            .build()
        assertEquals(
            """{"createTime": "2026-01-02T03:04:05Z", "name": "users/u/documents/d", "namespace": ["a", "b"], "ttl": "90.500s"}""",
            Json.write(json.decode("mnemo.v1.Document", document.toByteArray())),
        )
        val checkpoint = Checkpoint.newBuilder().setCheckpoint(ByteString.copyFromUtf8("hi")).setCheckpointNs("").build()
        assertEquals("""{"checkpoint": "aGk="}""", Json.write(json.decode("mnemo.v1.Checkpoint", checkpoint.toByteArray())))
        // Packed repeated floats, and a proto3 optional field set to its default is still printed.
        val embedding = Embedding.newBuilder().addValues(0.5f).addValues(-2f).build()
        assertEquals("""{"values": [0.5, -2]}""", Json.write(json.decode("mnemo.v1.Embedding", embedding.toByteArray())))
        val append = AppendMessagesRequest.newBuilder().setExpectedPosition(0).setTurn(0).build()
        assertEquals("""{"expectedPosition": "0"}""", Json.write(json.decode("mnemo.v1.AppendMessagesRequest", append.toByteArray())))
    }
}
