/* fuzz-mcp-message.c — libFuzzer target for the JSON-RPC decoder that reads every line an MCP
 * peer sends (a server the person configured, or a client of `corralctl mcp`).
 *
 * A message that parses is rebuilt with the builders, serialised, and must parse again to the
 * same kind; the text sanitiser runs on the raw input.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-mcp-message.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static cJSON *
rebuild (const CorralMcpMessage *msg)
{
        cJSON *id = msg->id ? cJSON_Duplicate (msg->id, TRUE) : NULL;

        switch (msg->kind) {
        case CORRAL_MCP_MESSAGE_REQUEST:
        case CORRAL_MCP_MESSAGE_NOTIFICATION: {
                cJSON *m = corral_mcp_notification_new (
                        msg->method, msg->params ? cJSON_Duplicate (msg->params, TRUE) : NULL);

                if (id)
                        cJSON_AddItemToObject (m, "id", id);
                return m;
        }
        case CORRAL_MCP_MESSAGE_RESULT:
                return corral_mcp_result_new (id, cJSON_Duplicate (msg->result, TRUE));
        case CORRAL_MCP_MESSAGE_ERROR:
        default:
                return corral_mcp_error_new (id, (int) CLAMP (msg->error_code, G_MININT, G_MAXINT),
                                             msg->error_message);
        }
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autoptr (CorralMcpMessage) msg = NULL;
        g_autoptr (CorralMcpMessage) again = NULL;
        g_autoptr (cJSON) id = NULL;
        g_autoptr (cJSON) built = NULL;
        g_autofree char *safe = corral_mcp_sanitize_text ((const char *) data, size, 256);
        char *text;
        int code = 0;

        g_assert (strlen (safe) <= 256 + strlen ("…"));
        msg = corral_mcp_message_parse ((const char *) data, size, &code, &id, NULL);
        if (!msg) {
                g_assert (code == -32700 || code == -32600);
                return 0;
        }
        built = rebuild (msg);
        text = cJSON_PrintUnformatted (built);
        g_assert (text != NULL && strchr (text, '\n') == NULL);
        again = corral_mcp_message_parse (text, strlen (text), &code, NULL, NULL);
        cJSON_free (text);
        g_assert (again != NULL);
        g_assert (again->kind == msg->kind);
        return 0;
}
