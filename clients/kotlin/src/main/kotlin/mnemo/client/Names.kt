package mnemo.client

import com.connectrpc.Code

/**
 * Resource names from ids, as the Python and TypeScript clients build them. The server
 * validates ids; these only refuse a `/` inside one, which would silently address another
 * resource (user `u1/conversations/c2`).
 */
public object Names {
    /** `users/{user}`. @throws MnemoException INVALID_ARGUMENT INVALID_NAME for an id with `/`. */
    public fun user(user: String): String = "users/${id(user, "user")}"

    /** `users/{user}/conversations/{conversation}`. */
    public fun conversation(user: String, conversation: String): String =
        "${user(user)}/conversations/${id(conversation, "conversation")}"

    /** The working memory of [conversation]; null or empty is the user's default one. */
    public fun memoryState(user: String, conversation: String? = null): String =
        if (conversation.isNullOrEmpty()) "${user(user)}/memoryState" else "${conversation(user, conversation)}/memoryState"

    /** `users/{user}/memories/{memory}`; [memory] is an id or the entry's name. */
    public fun memory(user: String, memory: String): String = child(user, "memories", memory, "memory")

    private fun child(user: String, collection: String, child: String, field: String): String {
        val parent = "${user(user)}/$collection/"
        return parent + id(child.removePrefix(parent), field)
    }

    private fun id(value: String, field: String): String {
        if ('/' in value) {
            throw MnemoException(
                Code.INVALID_ARGUMENT,
                "$field \"$value\" must be an id, not a path: it contains '/'",
                reason = "INVALID_NAME",
                metadata = mapOf("field" to field),
                fieldViolations = listOf(FieldViolation(field, "must not contain '/'")),
            )
        }
        return value
    }
}
