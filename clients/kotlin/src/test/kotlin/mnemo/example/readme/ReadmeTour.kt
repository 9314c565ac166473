package mnemo.example.readme

import kotlinx.coroutines.runBlocking
import mnemo.client.MnemoClient
import mnemo.client.MnemoException
import mnemo.client.Names
import mnemo.v1.MemoryState
import mnemo.v1.RecallMemoriesRequest
import mnemo.v1.SaveMemoryStateRequest

// MNEMO_TARGET names the server, as for the CLI (default 127.0.0.1:50051).
fun main() = runBlocking { readmeTour(System.getenv("MNEMO_TARGET") ?: "127.0.0.1:50051") }

suspend fun readmeTour(target: String) = MnemoClient(target).use { mnemo ->
    val ada = Names.user("ada")
    mnemo.memories.recallMemories(RecallMemoriesRequest.newBuilder().setParent(ada).setQuery("where does Ada live?").build())
        .collect { println("${it.rank} ${it.memory.text}") } // 1 Ada lives in Lyon.
    try {
        val stale = MemoryState.newBuilder().setName(Names.memoryState("ada", "work")).setSummary("stale").setEtag("old")
        mnemo.workingMemory.saveMemoryState(SaveMemoryStateRequest.newBuilder().setMemoryState(stale).build())
    } catch (e: MnemoException) {
        println("${e.codeName} ${e.reason}") // ABORTED ETAG_MISMATCH
    }
}
