package mnemo.example

import kotlinx.coroutines.flow.filterIsInstance
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import mnemo.client.FollowEvent
import mnemo.client.MnemoClient
import mnemo.client.MnemoException
import mnemo.client.Names
import mnemo.v1.CreateMemoryRequest
import mnemo.v1.GetMemoryStateRequest
import mnemo.v1.Memory
import mnemo.v1.MemoryState
import mnemo.v1.RecallMemoriesRequest
import mnemo.v1.SaveMemoryStateRequest

// The example of docs/clients/kotlin.md: MNEMO_TARGET=127.0.0.1:50051 (a `mnemo serve`).
fun main() = runBlocking {
    MnemoClient(System.getenv("MNEMO_TARGET") ?: "127.0.0.1:50051").use { mnemo ->
        val user = "kotlin-example"

        // Working memory: save, read back, and a stale etag refused.
        val state = Names.memoryState(user)
        val saved = mnemo.workingMemory.saveMemoryState(
            SaveMemoryStateRequest.newBuilder()
                .setMemoryState(MemoryState.newBuilder().setName(state).setSummary("Planning a trip to Lyon"))
                .build(),
        ).memoryState
        println("saved ${saved.name}")
        println("summary: " + mnemo.workingMemory.getMemoryState(GetMemoryStateRequest.newBuilder().setName(state).build()).memoryState.summary)
        try {
            mnemo.workingMemory.saveMemoryState(
                SaveMemoryStateRequest.newBuilder()
                    .setMemoryState(MemoryState.newBuilder().setName(state).setSummary("?").setEtag("stale"))
                    .build(),
            )
        } catch (e: MnemoException) {
            println("refused: ${e.codeName} ${e.reason}")
        }

        // Long-term memories, and recall as a Flow.
        for ((id, text) in listOf("cello" to "Plays the cello on Sundays", "city" to "Lives in Lyon")) {
            mnemo.memories.createMemory(
                CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemoryId(id)
                    .setMemory(Memory.newBuilder().setText(text)).build(),
            )
        }
        mnemo.memories.recallMemories(
            RecallMemoriesRequest.newBuilder().setParent(Names.user(user)).setQuery("where does the user live").build(),
        ).collect { println("recalled #${it.rank}: ${it.memory.text}") }

        // Invalid input: the status code, the ErrorInfo reason and the field violations.
        try {
            mnemo.memories.createMemory(
                CreateMemoryRequest.newBuilder().setParent(Names.user(user)).setMemory(Memory.newBuilder().setText(" ")).build(),
            )
        } catch (e: MnemoException) {
            println("invalid: ${e.codeName} ${e.reason} ${e.fieldViolations.map { it.field }}")
        }

        // The change feed from the start: the follower resumes by itself after a restart.
        val changes = mnemo.follow(user).events().filterIsInstance<FollowEvent.ChangeEvent>().take(3).toList()
        changes.forEach { println("change ${it.change.cursor}: ${it.change.resourceName}") }
    }
}
