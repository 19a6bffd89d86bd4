/* test-assistant-loop-util.h — the assistant loop's test fixture: a real session against the fake LLM
 * provider (in-process) and a local corral-agent (no VM), with everything it emits recorded.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-assistant-loop.h"
#include "fake-llm-server.h"
#include "test-util.h"

G_BEGIN_DECLS

typedef struct {
        CorralLlmProviderKind kind;
        TestAgent *agent;
        CorralFakeLlmServer *server;
        CorralLlmProvider *provider;
        CorralAssistantSession *session;
        char *dir; /* a fresh temporary folder for the test's files */
        GString *text; /* streamed text */
        GPtrArray *started; /* of CorralAssistantToolCard */
        GPtrArray *cards; /* finished, of CorralAssistantToolCard */
        GPtrArray *notices; /* of char * */
        GPtrArray *approvals; /* of CorralAssistantApproval, as asked */
        gboolean answer_approvals; /* answer at once with `answer` */
        CorralAssistantAnswer answer;
        guint n_tools; /* tool ids handed out */
        CorralAssistantTaskResult *result;
        GError *error;
} Fix;

/* Sets XDG_STATE_HOME (and XDG_CONFIG_HOME) to a fresh folder: call first in main. */
void fix_init_environment (void);
Fix *fix_new (CorralLlmProviderKind kind);
void fix_free (Fix *fix);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Fix, fix_free)

/* A session on the fixture's provider and agent (replaces the current one). */
void fix_new_session (Fix *fix);
/* Queues a reply in the fixture's wire format; tool_name NULL for text only. stop: "end",
 * "tool", "max" or a raw word. */
void fix_push (Fix *fix,
               const char *text,
               const char *tool_name,
               const char *input_json,
               const char *stop);
/* Runs a task to the end (30 s at most); afterwards result or error is set. */
void fix_run (Fix *fix, const char *task, GCancellable *cancellable);
/* The finished card i, and its output. */
CorralAssistantToolCard *fix_card (Fix *fix, guint i);
const char *fix_output (Fix *fix, guint i);
/* A path in the fixture's folder. (transfer full) */
char *fix_path (Fix *fix, const char *name);
/* The JSON body of request i the loop sent to the provider. */
const cJSON *fix_sent (Fix *fix, guint i);
/* The request body of i as text (for substring checks). (transfer full) */
char *fix_sent_text (Fix *fix, guint i);

G_END_DECLS
