package mnemo.client

import java.lang.reflect.Method
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap

/**
 * Fills an empty `request_id` with a fresh uuid (the write requests that can be replayed
 * have one). The lite runtime has no field reflection, so this uses the generated
 * accessors (`getRequestId`, `toBuilder`, `setRequestId`, `build`) by Java reflection,
 * looked up once per class; with R8/ProGuard keep them for the request classes (or pass
 * `autoRequestIds = false` and set request ids yourself).
 */
internal object RequestIds {
    private class Accessors(val get: Method, val toBuilder: Method, val set: Method, val build: Method)

    private val accessors = ConcurrentHashMap<Class<*>, Any>()
    private val none = Any()

    @Suppress("UNCHECKED_CAST")
    fun <T : Any> fill(message: T): T {
        val found = accessors.getOrPut(message.javaClass) { find(message.javaClass) ?: none }
        val access = found as? Accessors ?: return message
        if ((access.get.invoke(message) as String).isNotEmpty()) return message
        val builder = access.toBuilder.invoke(message)
        access.set.invoke(builder, UUID.randomUUID().toString())
        return access.build.invoke(builder) as T
    }

    private fun find(type: Class<*>): Accessors? = try {
        val get = type.getMethod("getRequestId")
        val toBuilder = type.getMethod("toBuilder")
        val builder = toBuilder.returnType
        if (get.returnType != String::class.java) {
            null
        } else {
            Accessors(get, toBuilder, builder.getMethod("setRequestId", String::class.java), builder.getMethod("build"))
        }
    } catch (e: NoSuchMethodException) {
        null
    }
}
