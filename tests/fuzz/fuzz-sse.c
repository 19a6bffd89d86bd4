/* fuzz-sse.c — libFuzzer target for what an LLM provider streams back: the bytes go through
 * the SSE parser into the Anthropic decoder and, separately, the OpenAI decoder, cut into
 * chunks whose size the input chooses. Any outcome but a response or a GError is a bug; a
 * response is then sent back through both request builders, whose output must be JSON.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "llm-sse.h"
#include "llm-wire.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
on_event (const CorralLlmEvent *event, gpointer user_data)
{
        if (event->type == CORRAL_LLM_EVENT_TEXT_DELTA)
                g_assert (g_utf8_validate_len (event->text, event->text_len, NULL));
        else if (event->type == CORRAL_LLM_EVENT_TOOL_USE_START)
                g_assert (event->tool_name != NULL && event->tool_id != NULL);
}

typedef struct {
        const CorralLlmWire *wire;
        gpointer decoder;
} Ctx;

static gboolean
on_sse (const char *type, const char *data, gsize len, gpointer user_data, GError **error)
{
        Ctx *ctx = user_data;

        return ctx->wire->decoder_event (ctx->decoder, type, data, len, error);
}

static void
round_trip (CorralLlmResponse *r)
{
        CorralLlmConversation *conv = corral_llm_conversation_new ("m", 16);
        char *bodies[2];

        corral_llm_conversation_add_user_text (conv, "hi");
        corral_llm_conversation_add_response (conv, r);
        bodies[0] = corral_llm_anthropic_build_body (conv, NULL);
        bodies[1] = corral_llm_openai_build_body (conv, NULL);
        for (int i = 0; i < 2; i++) {
                cJSON *json = cJSON_Parse (bodies[i]);
                g_assert (json != NULL);
                cJSON_Delete (json);
                g_free (bodies[i]);
        }
        corral_llm_conversation_free (conv);
}

static void
run (const CorralLlmWire *wire, const uint8_t *data, size_t size, size_t step)
{
        CorralLlmLimits limits = { 4096, 1 << 20, 16, 4096 };
        Ctx ctx = { wire, wire->decoder_new (&limits, on_event, NULL) };
        CorralSseParser *p = corral_sse_parser_new (4096, 8192, on_sse, &ctx);
        GError *error = NULL;
        CorralLlmResponse *r = NULL;
        gboolean ok = TRUE;

        for (size_t off = 0; ok && off < size; off += step)
                ok = corral_sse_parser_feed (p, (const char *) data + off, MIN (step, size - off),
                                             &error);
        if (ok)
                ok = corral_sse_parser_finish (p, NULL, &error);
        if (ok)
                r = wire->decoder_finish (ctx.decoder, &error);
        g_assert ((r != NULL) != (error != NULL));
        if (r != NULL)
                round_trip (r);
        corral_llm_response_free (r);
        g_clear_error (&error);
        corral_sse_parser_free (p);
        wire->decoder_free (ctx.decoder);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        size_t step = size > 0 ? (size_t) (data[0] % 13) + 1 : 1;

        run (&corral_llm_anthropic_wire, data, size, step);
        run (&corral_llm_openai_wire, data, size, step);
        return 0;
}
