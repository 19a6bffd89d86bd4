/* assistant-store.h — where sessions live on disk.
 *
 * $XDG_STATE_HOME/corral/sessions/ID/ (0700), not the VM's folder: a --local session has no VM,
 * and the history of what an agent did must outlive the VM it did it in.
 *   transcript.jsonl   one JSON object per line, appended as the session goes:
 *                        {"type":"session","version":1,"id","created","model","vm"}
 *                        {"type":"user","text"}                        a task (or a follow-up)
 *                        {"type":"response","blocks":[...],"stop","usage"}   a model reply
 *                        {"type":"tool_result","tool_use_id","content","is_error"}
 *                        {"type":"task","event":"start"|"end","task":N,...}
 *                      Replaying user/response/tool_result lines rebuilds the conversation.
 *   task-N.audit.jsonl per task: tool calls, processes, approvals, and the VM's file-server
 *                      (audit.jsonl) and egress (egress.jsonl) records written while it ran.
 *
 * An ID is [A-Za-z0-9-]{1,64} (corral_assistant_store_id_is_valid), so it can never name another
 * folder. Lines are bounded when read back (16 MiB each, 256 MiB in all).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-llm.h"

G_BEGIN_DECLS

typedef struct _AssistantStore AssistantStore;

gboolean corral_assistant_store_id_is_valid (const char *id);
/* (transfer full) $XDG_STATE_HOME/corral/sessions */
char *corral_assistant_store_root (void);

/* Removes the session's folder and the files in it (its transcript and audit logs); a session
 * that has none is not an error. The folder holds only files the store wrote: anything else in
 * it (a folder, a link) is left, and the error says so. Blocking. */
gboolean corral_assistant_store_remove (const char *id, GError **error);

/* A new id; nothing is created until the first write. */
AssistantStore *assistant_store_new (void);
/* An existing session: fails with G_IO_ERROR_NOT_FOUND for an unknown id. */
AssistantStore *assistant_store_open (const char *id, GError **error);
void assistant_store_free (AssistantStore *store);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (AssistantStore, assistant_store_free)

const char *assistant_store_get_id (AssistantStore *store);
const char *assistant_store_get_dir (AssistantStore *store);

/* Appends one line (takes record). Failures are logged once, never fatal: the task goes on. */
void assistant_store_append (AssistantStore *store, cJSON *record);
/* The header line, written before the first other line of a new session. */
void assistant_store_set_header (AssistantStore *store, cJSON *header);

/* Rebuilds conv from the transcript; returns the number of tasks seen. */
gboolean assistant_store_replay (AssistantStore *store,
                                 CorralLlmConversation *conv,
                                 guint *ret_tasks,
                                 GError **error);

/* Records for the conversation (transfer full). */
cJSON *assistant_store_user_record (const char *text);
cJSON *assistant_store_response_record (const CorralLlmResponse *response);
/* outcome: (nullable) the person's answer to a question (CorralLlmBlock's outcome). */
cJSON *assistant_store_tool_result_record (const char *id,
                                           const char *content,
                                           gboolean is_error,
                                           const char *outcome);

/* Conversation rules shared by the live loop and the replay, so both build the same thing. */
/* A user's text: appended to the last message when it is a user message (tool results of an
 * interrupted turn), else a new user message. */
void assistant_conv_add_user_text (CorralLlmConversation *conv, const char *text);
/* Tool calls of the last assistant message that have no result yet (an interrupted task).
 * (element-type utf8) (transfer full) their ids, maybe empty. */
GPtrArray *assistant_conv_open_tool_uses (const CorralLlmConversation *conv);

/* The per-task audit log: appends one record (takes it) to task-N.audit.jsonl. */
void assistant_store_audit (AssistantStore *store, guint task, cJSON *record);

G_END_DECLS
