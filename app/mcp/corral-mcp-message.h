/* corral-mcp-message.h — JSON-RPC 2.0 messages as MCP sends them over stdio: one JSON object per
 * line (MCP "stdio" transport), no batches.
 *
 * Everything a peer sends is untrusted: corral_mcp_message_parse() checks the shape (jsonrpc
 * "2.0", id a string or an integer, method a bounded string, params/result an object, error an
 * object with an integer code) and refuses what it cannot represent faithfully (an escaped NUL
 * in a string, which cJSON would silently cut the string at).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-cjson.h"

#include <gio/gio.h>

G_BEGIN_DECLS

/* A line longer than this closes the connection: a peer cannot grow our memory without bound. */
#define CORRAL_MCP_MAX_LINE ((gsize) 4 * 1024 * 1024)
#define CORRAL_MCP_MAX_METHOD 256
#define CORRAL_MCP_MAX_ID 256

/* JSON-RPC 2.0 error codes. */
#define CORRAL_MCP_PARSE_ERROR (-32700)
#define CORRAL_MCP_INVALID_REQUEST (-32600)
#define CORRAL_MCP_METHOD_NOT_FOUND (-32601)
#define CORRAL_MCP_INVALID_PARAMS (-32602)
#define CORRAL_MCP_INTERNAL_ERROR (-32603)

#define CORRAL_MCP_ERROR (corral_mcp_error_quark ())

typedef enum {
        CORRAL_MCP_ERROR_CONFIG, /* the mcpServers file is wrong */
        CORRAL_MCP_ERROR_PROTOCOL, /* the peer broke JSON-RPC or MCP; connection closed */
        CORRAL_MCP_ERROR_TOO_LARGE, /* a line, a list or a value past its limit */
        CORRAL_MCP_ERROR_REMOTE, /* the peer answered with a JSON-RPC error */
        CORRAL_MCP_ERROR_CLOSED, /* the peer exited or closed the stream */
        CORRAL_MCP_ERROR_TIMEOUT,
        CORRAL_MCP_ERROR_UNSUPPORTED_VERSION,
        CORRAL_MCP_ERROR_UNKNOWN_TOOL,
        CORRAL_MCP_ERROR_INVALID_ARGUMENT,
        CORRAL_MCP_ERROR_BUSY, /* too many requests in flight */
} CorralMcpError;

GQuark corral_mcp_error_quark (void);

typedef enum {
        CORRAL_MCP_MESSAGE_REQUEST,
        CORRAL_MCP_MESSAGE_NOTIFICATION,
        CORRAL_MCP_MESSAGE_RESULT,
        CORRAL_MCP_MESSAGE_ERROR,
} CorralMcpMessageKind;

typedef struct {
        CorralMcpMessageKind kind;
        cJSON *root; /* the whole message; the pointers below point into it */
        const cJSON *id; /* (nullable) a string or an integer number; NULL for notifications */
        const char *method; /* requests and notifications */
        const cJSON *params; /* (nullable) an object */
        const cJSON *result; /* RESULT: an object */
        gint64 error_code; /* ERROR */
        const char *error_message; /* ERROR: never NULL, may be "" */
} CorralMcpMessage;

/* Parses one line (without its newline). On failure *ret_code says which JSON-RPC error to answer
 * with (-32700 for bad JSON, -32600 for a bad shape) and *ret_id, when not NULL, gets a copy of
 * the id when one could be read (else NULL). */
CorralMcpMessage *corral_mcp_message_parse (
        const char *line, gsize len, int *ret_code, cJSON **ret_id, GError **error);
/* Parses untrusted JSON text: valid UTF-8, no NUL byte and no escaped NUL (see above). */
cJSON *corral_mcp_json_parse (const char *text, gsize len, GError **error);

void corral_mcp_message_free (CorralMcpMessage *msg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralMcpMessage, corral_mcp_message_free)

/* An id as an integer, when it is one we could have sent (a non-negative integer). */
gboolean corral_mcp_message_get_int_id (const CorralMcpMessage *msg, gint64 *ret);

/* Builders. params/result/id: (transfer full) (nullable). Return (transfer full). */
cJSON *corral_mcp_request_new (gint64 id, const char *method, cJSON *params);
cJSON *corral_mcp_notification_new (const char *method, cJSON *params);
cJSON *corral_mcp_result_new (cJSON *id, cJSON *result);
cJSON *corral_mcp_error_new (cJSON *id, int code, const char *message);

/* Peer text made safe for an error message or a log: valid UTF-8, control characters (but
 * newline and tab) replaced, at most max_bytes (cut on a character boundary, "…" appended). */
char *corral_mcp_sanitize_text (const char *text, gsize len, gsize max_bytes);

/* Reads an optional member of obj with its type checked; absent is fine, a wrong type sets error
 * naming the key. max_len bounds strings (bytes). */
gboolean corral_mcp_get_string (
        const cJSON *obj, const char *key, gsize max_len, const char **ret, GError **error);

G_END_DECLS
