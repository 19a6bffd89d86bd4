/* assistant-card.c — tool cards and task results.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include <string.h>

typedef struct {
        CorralAssistantToolCard card;
        gatomicrefcount ref;
} CardBox;

G_DEFINE_BOXED_TYPE (CorralAssistantToolCard,
                     corral_assistant_tool_card,
                     corral_assistant_tool_card_ref,
                     corral_assistant_tool_card_unref)

/* What the UI shows before the tool has looked at its arguments; tools refine it. */
static char *
initial_title (const CorralLlmBlock *block)
{
        const char *keys[] = { "command", "path", "host" };

        for (gsize i = 0; i < G_N_ELEMENTS (keys); i++) {
                const cJSON *item = cJSON_GetObjectItemCaseSensitive (block->input, keys[i]);
                if (cJSON_IsString (item)) {
                        g_autofree char *line =
                                g_strndup (item->valuestring, strcspn (item->valuestring, "\n"));
                        return g_utf8_make_valid (line, -1);
                }
        }
        return g_strdup (block->name);
}

CorralAssistantToolCard *
assistant_tool_card_new (const CorralLlmBlock *block)
{
        CardBox *box = g_new0 (CardBox, 1);
        CorralAssistantToolCard *card = &box->card;
        char *json = cJSON_PrintUnformatted (block->input);

        g_atomic_ref_count_init (&box->ref);
        card->tool_id = g_strdup (block->id);
        card->tool = g_strdup (block->name);
        card->title = initial_title (block);
        card->input_json = g_strdup (json ? json : "{}");
        cJSON_free (json);
        card->exit_code = -1;
        card->files_read = g_ptr_array_new_with_free_func (g_free);
        card->files_changed = g_ptr_array_new_with_free_func (g_free);
        card->network = g_ptr_array_new_with_free_func (g_free);
        card->blocked = g_ptr_array_new_with_free_func (g_free);
        return card;
}

CorralAssistantToolCard *
corral_assistant_tool_card_ref (CorralAssistantToolCard *card)
{
        g_return_val_if_fail (card != NULL, NULL);
        g_atomic_ref_count_inc (&((CardBox *) card)->ref);
        return card;
}

void
corral_assistant_tool_card_unref (CorralAssistantToolCard *card)
{
        if (!card || !g_atomic_ref_count_dec (&((CardBox *) card)->ref))
                return;
        g_free (card->outcome);
        g_free (card->tool_id);
        g_free (card->tool);
        g_free (card->title);
        g_free (card->input_json);
        g_free (card->command);
        g_free (card->output);
        g_ptr_array_unref (card->files_read);
        g_ptr_array_unref (card->files_changed);
        g_ptr_array_unref (card->network);
        g_ptr_array_unref (card->blocked);
        g_clear_pointer (&card->image, g_bytes_unref);
        g_free (card->image_media_type);
        g_free (card);
}

void
corral_assistant_task_result_free (CorralAssistantTaskResult *result)
{
        if (!result)
                return;
        g_free (result->final_text);
        g_free (result);
}
