/* corral-assistant-source.h — the chat view's source for real work: a CorralAssistantSession (the
 * assistant loop, app/assistant/) seen through the CorralChatSource interface. Every message the person
 * sends becomes a task of the session; its signals become the chat's.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-assistant-loop.h"
#include "corral-chat-source.h"
#include "corral-chat-view.h"

G_BEGIN_DECLS

#define CORRAL_TYPE_ASSISTANT_SOURCE (corral_assistant_source_get_type ())
G_DECLARE_FINAL_TYPE (
        CorralAssistantSource, corral_assistant_source, CORRAL, ASSISTANT_SOURCE, GObject)

/* (transfer full) session: referenced. */
CorralAssistantSource *corral_assistant_source_new (CorralAssistantSession *session);
CorralAssistantSession *corral_assistant_source_get_session (CorralAssistantSource *self);

/* A session for a started workspace: the provider's key from the keychain (or the environment),
 * the VM's shares and credential names (never values) looked up on a worker thread, the
 * provider and session made here. model: NULL or "" for the provider's default; base_url:
 * NULL or "" for the provider's (OpenAI-compatible servers). client: connected to the VM.
 * unconfined_commands: the task's setting (CorralTaskConfig), the shell tool's commands run
 * without the VM's second wall. */
void corral_assistant_source_new_async (CorralLlmProviderKind kind,
                                        const char *model,
                                        const char *base_url,
                                        CorralAgentClient *client,
                                        const char *vm_name,
                                        const char *vm_dir,
                                        gboolean unconfined_commands,
                                        GCancellable *cancellable,
                                        GAsyncReadyCallback callback,
                                        gpointer user_data);
/* Like corral_assistant_source_new_async, for a reopened workspace: the session recorded in
 * the task's record (corral-task-record.h) is resumed from its transcript. When it cannot be (no record, transcript
 * missing or unreadable), a new session starts in the same workspace and
 * corral_assistant_source_restore() says so in the chat. */
void corral_assistant_source_resume_async (CorralLlmProviderKind kind,
                                           const char *model,
                                           const char *base_url,
                                           CorralAgentClient *client,
                                           const char *vm_name,
                                           const char *vm_dir,
                                           gboolean unconfined_commands,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback,
                                           gpointer user_data);
/* Finishes both. A new session's id is added to the task's record so the task can be
 * reopened. (transfer full) */
CorralAssistantSource *corral_assistant_source_new_finish (GAsyncResult *result, GError **error);

/* Shows a resumed session's conversation in view (see corral_assistant_source_replay), or the
 * notice that it could not be restored. Nothing for a new session. */
void corral_assistant_source_restore (CorralAssistantSource *self, CorralChatView *view);
/* Computer use: the assistant gets the computer tool on this screen (the task's Screen panel's;
 * NULL: none). */
void corral_assistant_source_set_computer (CorralAssistantSource *self, CorralComputer *computer);
/* Shows conv in view: the person's messages, the assistant's text, and one finished card per
 * tool call with its result (a call without one, from an interrupted task, says so). */
void corral_assistant_source_replay (const CorralLlmConversation *conv, CorralChatView *view);

G_END_DECLS
