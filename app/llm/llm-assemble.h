/* llm-assemble.h — builds a CorralLlmResponse from streamed fragments (private to app/llm).
 *
 * Both wire decoders feed it: blocks are started, grown and finished by index, and it keeps
 * the limits (number of blocks, tool input size) and reports the streaming events.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "llm-conversation.h"
#include "llm-events.h"

G_BEGIN_DECLS

typedef struct CorralLlmAssembler CorralLlmAssembler;

CorralLlmAssembler *corral_llm_assembler_new (const CorralLlmLimits *limits,
                                              CorralLlmEventFunc func,
                                              gpointer user_data);
void corral_llm_assembler_free (CorralLlmAssembler *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralLlmAssembler, corral_llm_assembler_free)

gboolean corral_llm_assembler_start_text (CorralLlmAssembler *a, guint *ret_index, GError **error);
gboolean corral_llm_assembler_start_tool (
        CorralLlmAssembler *a, const char *id, const char *name, guint *ret_index, GError **error);
gboolean corral_llm_assembler_append (
        CorralLlmAssembler *a, guint index, const char *fragment, gsize len, GError **error);
/* Parses a tool block's input; a finished block refuses more fragments. */
gboolean corral_llm_assembler_finish_block (CorralLlmAssembler *a, guint index, GError **error);
gboolean corral_llm_assembler_block_is_tool (CorralLlmAssembler *a, guint index);
/* (transfer none) the response being built: decoders set id, model, stop reason and usage. */
CorralLlmResponse *corral_llm_assembler_peek (CorralLlmAssembler *a);
/* Finishes every open block. (transfer full) */
CorralLlmResponse *corral_llm_assembler_steal (CorralLlmAssembler *a, GError **error);

/* Helpers for the decoders: a JSON number as guint64 (0 when absent or not a count). */
guint64 corral_llm_json_count (const cJSON *object, const char *name);
/* (transfer none) a string member or NULL */
const char *corral_llm_json_string (const cJSON *object, const char *name);

G_END_DECLS
