/* corral-mcp-message.c — JSON-RPC 2.0 message decoder and builders for MCP.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-message.h"

#include <glib/gi18n-lib.h>
#include <math.h>
#include <string.h>

/* clang-format off */
G_DEFINE_QUARK (corral-mcp-error-quark, corral_mcp_error)
/* clang-format on */

/* JSON numbers are doubles in cJSON; ids past 2^53 would not round-trip. */
#define MAX_SAFE_INT 9007199254740991.0

void
corral_mcp_message_free (CorralMcpMessage *msg)
{
        if (!msg)
                return;
        cJSON_Delete (msg->root);
        g_free (msg);
}

/* cJSON turns "\u0000" into a NUL that ends the C string early: "a\u0000b" would read as "a".
 * Rather than act on a silently shortened string (a path, a command), refuse the message. */
static gboolean
has_escaped_nul (const char *line, gsize len)
{
        for (gsize i = 0; i + 1 < len; i++) {
                if (line[i] != '\\')
                        continue;
                if (line[i + 1] == 'u' && i + 5 < len && memcmp (line + i + 2, "0000", 4) == 0)
                        return TRUE;
                i++; /* skip the escaped character, so "\\u0000" is not mistaken for one */
        }
        return FALSE;
}

cJSON *
corral_mcp_json_parse (const char *text, gsize len, GError **error)
{
        cJSON *json;

        if (memchr (text, '\0', len) || has_escaped_nul (text, len) ||
            !g_utf8_validate (text, (gssize) len, NULL)) {
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_PROTOCOL,
                                     _ ("not valid UTF-8 JSON (or it contains a NUL character)"));
                return NULL;
        }
        json = cJSON_ParseWithLength (text, len);
        if (!json)
                g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_PROTOCOL,
                                     _ ("not valid JSON"));
        return json;
}

static gboolean
valid_id (const cJSON *id)
{
        double v;

        if (cJSON_IsString (id))
                return strlen (id->valuestring) <= CORRAL_MCP_MAX_ID;
        if (!cJSON_IsNumber (id))
                return FALSE;
        v = id->valuedouble;
        return isfinite (v) && v == floor (v) && fabs (v) <= MAX_SAFE_INT;
}

gboolean
corral_mcp_message_get_int_id (const CorralMcpMessage *msg, gint64 *ret)
{
        if (!msg->id || !cJSON_IsNumber (msg->id) || msg->id->valuedouble < 0)
                return FALSE;
        *ret = (gint64) msg->id->valuedouble;
        return TRUE;
}

static gboolean
fail (GError **error, int *ret_code, int code, const char *message)
{
        *ret_code = code;
        g_set_error_literal (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_PROTOCOL, message);
        return FALSE;
}

static gboolean
classify_call (CorralMcpMessage *msg, const cJSON *method, int *ret_code, GError **error)
{
        const cJSON *params = cJSON_GetObjectItemCaseSensitive (msg->root, "params");

        if (!cJSON_IsString (method) || !*method->valuestring ||
            strlen (method->valuestring) > CORRAL_MCP_MAX_METHOD)
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("JSON-RPC “method” must be a short non-empty string"));
        if (params && !cJSON_IsObject (params))
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("JSON-RPC “params” must be an object"));
        msg->method = method->valuestring;
        msg->params = params;
        msg->kind = msg->id ? CORRAL_MCP_MESSAGE_REQUEST : CORRAL_MCP_MESSAGE_NOTIFICATION;
        return TRUE;
}

static gboolean
classify_error (CorralMcpMessage *msg, const cJSON *err, int *ret_code, GError **error)
{
        const cJSON *code = cJSON_GetObjectItemCaseSensitive (err, "code");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive (err, "message");

        if (!cJSON_IsObject (err) || !cJSON_IsNumber (code) || !isfinite (code->valuedouble) ||
            code->valuedouble != floor (code->valuedouble) || fabs (code->valuedouble) > 1e15 ||
            (text && !cJSON_IsString (text)))
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("JSON-RPC “error” must be an object with an integer “code”"));
        msg->kind = CORRAL_MCP_MESSAGE_ERROR;
        msg->error_code = (gint64) code->valuedouble;
        msg->error_message = text ? text->valuestring : "";
        return TRUE;
}

static gboolean
classify (CorralMcpMessage *msg, int *ret_code, GError **error)
{
        const cJSON *version = cJSON_GetObjectItemCaseSensitive (msg->root, "jsonrpc");
        const cJSON *id = cJSON_GetObjectItemCaseSensitive (msg->root, "id");
        const cJSON *method = cJSON_GetObjectItemCaseSensitive (msg->root, "method");
        const cJSON *result = cJSON_GetObjectItemCaseSensitive (msg->root, "result");
        const cJSON *err = cJSON_GetObjectItemCaseSensitive (msg->root, "error");

        if (!cJSON_IsString (version) || strcmp (version->valuestring, "2.0") != 0)
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("not a JSON-RPC 2.0 message (“jsonrpc” is not \"2.0\")"));
        /* A null id only appears in error replies to messages that could not be read. */
        if (id && !cJSON_IsNull (id) && !valid_id (id))
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("JSON-RPC “id” must be a string or an integer"));
        msg->id = id && !cJSON_IsNull (id) ? id : NULL;
        if (method)
                return (!result && !err) ? classify_call (msg, method, ret_code, error)
                                         : fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                                                 _ ("JSON-RPC message is both a call and a reply"));
        if (!id || (result && err) || (!result && !err))
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("JSON-RPC reply needs an “id” and exactly one of “result” and "
                                "“error”"));
        if (err)
                return classify_error (msg, err, ret_code, error);
        if (!cJSON_IsObject (result) || !msg->id)
                return fail (error, ret_code, CORRAL_MCP_INVALID_REQUEST,
                             _ ("JSON-RPC “result” must be an object"));
        msg->kind = CORRAL_MCP_MESSAGE_RESULT;
        msg->result = result;
        return TRUE;
}

CorralMcpMessage *
corral_mcp_message_parse (
        const char *line, gsize len, int *ret_code, cJSON **ret_id, GError **error)
{
        g_autoptr (CorralMcpMessage) msg = g_new0 (CorralMcpMessage, 1);
        int code = 0;

        if (ret_id)
                *ret_id = NULL;
        if (len > CORRAL_MCP_MAX_LINE) {
                fail (error, &code, CORRAL_MCP_INVALID_REQUEST, _ ("JSON-RPC message too long"));
                goto out;
        }
        if (memchr (line, '\0', len) || has_escaped_nul (line, len) ||
            !g_utf8_validate (line, (gssize) len, NULL)) {
                fail (error, &code, CORRAL_MCP_PARSE_ERROR,
                      _ ("JSON-RPC message is not valid UTF-8 JSON (or contains a NUL character)"));
                goto out;
        }
        msg->root = cJSON_ParseWithLength (line, len);
        if (!msg->root) {
                fail (error, &code, CORRAL_MCP_PARSE_ERROR,
                      _ ("JSON-RPC message is not valid JSON"));
                goto out;
        }
        if (!cJSON_IsObject (msg->root)) {
                fail (error, &code, CORRAL_MCP_INVALID_REQUEST,
                      _ ("JSON-RPC message is not an object (batches are not supported)"));
                goto out;
        }
        if (classify (msg, &code, error))
                return g_steal_pointer (&msg);
        if (ret_id) {
                const cJSON *id = cJSON_GetObjectItemCaseSensitive (msg->root, "id");

                *ret_id = id && valid_id (id) ? cJSON_Duplicate (id, TRUE) : NULL;
        }
out:
        if (ret_code)
                *ret_code = code;
        return NULL;
}

static cJSON *
envelope (void)
{
        cJSON *msg = cJSON_CreateObject ();

        cJSON_AddStringToObject (msg, "jsonrpc", "2.0");
        return msg;
}

cJSON *
corral_mcp_request_new (gint64 id, const char *method, cJSON *params)
{
        cJSON *msg = envelope ();

        cJSON_AddNumberToObject (msg, "id", (double) id);
        cJSON_AddStringToObject (msg, "method", method);
        if (params)
                cJSON_AddItemToObject (msg, "params", params);
        return msg;
}

cJSON *
corral_mcp_notification_new (const char *method, cJSON *params)
{
        cJSON *msg = envelope ();

        cJSON_AddStringToObject (msg, "method", method);
        if (params)
                cJSON_AddItemToObject (msg, "params", params);
        return msg;
}

cJSON *
corral_mcp_result_new (cJSON *id, cJSON *result)
{
        cJSON *msg = envelope ();

        cJSON_AddItemToObject (msg, "id", id ? id : cJSON_CreateNull ());
        cJSON_AddItemToObject (msg, "result", result ? result : cJSON_CreateObject ());
        return msg;
}

cJSON *
corral_mcp_error_new (cJSON *id, int code, const char *message)
{
        cJSON *msg = envelope ();
        cJSON *err = cJSON_AddObjectToObject (msg, "error");

        cJSON_AddItemToObject (msg, "id", id ? id : cJSON_CreateNull ());
        cJSON_AddNumberToObject (err, "code", code);
        cJSON_AddStringToObject (err, "message", message);
        return msg;
}

char *
corral_mcp_sanitize_text (const char *text, gsize len, gsize max_bytes)
{
        g_autofree char *valid = len > 0 ? g_utf8_make_valid (text, (gssize) len) : NULL;
        GString *out = g_string_new (NULL);

        if (!valid)
                return g_string_free (out, FALSE);
        for (const char *p = valid; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                gsize n = (gsize) (g_utf8_next_char (p) - p);

                if (out->len + n > max_bytes) {
                        g_string_append (out, "…");
                        break;
                }
                if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (c >= 0x80 && c < 0xa0))
                        g_string_append_c (out, '?');
                else
                        g_string_append_len (out, p, (gssize) n);
        }
        return g_string_free (out, FALSE);
}

gboolean
corral_mcp_get_string (
        const cJSON *obj, const char *key, gsize max_len, const char **ret, GError **error)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);

        *ret = NULL;
        if (!item)
                return TRUE;
        if (!cJSON_IsString (item)) {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” must be a string"), key);
                return FALSE;
        }
        if (strlen (item->valuestring) > max_len) {
                g_set_error (error, CORRAL_MCP_ERROR, CORRAL_MCP_ERROR_TOO_LARGE,
                             _ ("“%s” is longer than %zu bytes"), key, max_len);
                return FALSE;
        }
        *ret = item->valuestring;
        return TRUE;
}
