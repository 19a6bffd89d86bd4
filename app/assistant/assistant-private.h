/* assistant-private.h — what the parts of the assistant loop share (not installed, not public).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-assistant-loop.h"

#include "assistant-sandbox-log.h"
#include "assistant-store.h"

G_BEGIN_DECLS

struct _CorralAssistantSession {
        GObject parent_instance;

        CorralLlmProvider *provider;
        CorralAgentClient *client;
        CorralMcpManager *mcp;
        CorralComputer *computer; /* nullable: computer use is off */
        struct _AssistantHelp *help; /* nullable: ask_for_help waiting for the person */
        CorralLlmConversation *conv;
        AssistantStore *store;

        char *vm_name;
        char *vm_dir;
        GPtrArray *shares; /* of CorralShare */
        char **credential_names;

        guint max_steps;
        guint shell_default_timeout_s;
        gboolean unconfined_commands; /* the person lifted the VM's second wall for this task */
        guint shell_max_timeout_s;
        gsize shell_head_tail;

        GTask *task; /* the running task, if any */
        guint task_number;
        GPtrArray *task_rules; /* network rules allowed "for this task": removed at its end */
};

/* Tool calls (assistant-tools.c) ------------------------------------------------------------------ */

typedef struct {
        CorralAssistantSession *session; /* not owned: the session outlives its tasks */
        CorralAssistantToolCard *card;
        cJSON *input; /* a copy of the block's input: an object */
        GCancellable *cancellable;
        GTask *task;
        gint64 started_us;
        AssistantLogMark mark;
        gboolean returned;
} AssistantToolCall;

/* The tools offered to the model (built-ins and the MCP manager's), written into conv. */
void agent_tools_describe (CorralAssistantSession *self, CorralLlmConversation *conv);

/* Runs the tool named in block. Always completes with a result for the model (errors are
 * results too); only cancellation fails. The card is filled as it goes. */
void agent_tools_run_async (CorralAssistantSession *self,
                            const CorralLlmBlock *block,
                            CorralAssistantToolCard *card,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data);
gboolean agent_tools_run_finish (GAsyncResult *result, GError **error);

/* Completes the call with text for the model (takes it). */
void assistant_tool_call_return (AssistantToolCall *call, char *text, gboolean is_error);
/* The exit status in the shell tool's last line of a result ("[exit status N]"), or -1. */
int assistant_shell_parse_status (const char *line, gsize len);
void assistant_tool_call_return_error (AssistantToolCall *call, const GError *error);

/* Argument helpers: on a missing or mistyped argument they complete the call with an error
 * the model can act on and return FALSE. An optional argument that is absent leaves *ret. */
gboolean assistant_arg_string (AssistantToolCall *call,
                               const char *name,
                               gboolean required,
                               const char **ret);
gboolean assistant_arg_int (AssistantToolCall *call,
                            const char *name,
                            gint64 min,
                            gint64 max,
                            gboolean required,
                            gint64 *ret);
/* A VM path: absolute, no NUL; completes the call with an error otherwise. */
gboolean assistant_arg_path (AssistantToolCall *call, const char **ret);

/* The tools themselves. */
void assistant_tool_shell (AssistantToolCall *call);
void assistant_tool_view (AssistantToolCall *call);
void assistant_tool_create (AssistantToolCall *call);
void assistant_tool_str_replace (AssistantToolCall *call);
void assistant_tool_insert (AssistantToolCall *call);
void assistant_tool_request_approval (AssistantToolCall *call);
void assistant_tool_mcp (AssistantToolCall *call);
/* The computer tool (assistant-computer.c): described into conv when the session has a screen,
 * and run on it. */
void assistant_computer_describe (CorralAssistantSession *self, CorralLlmConversation *conv);
void assistant_tool_computer (AssistantToolCall *call);
/* ask_for_help: offered with the computer tool. */
void assistant_tool_ask_for_help (AssistantToolCall *call);
void assistant_session_emit_help (CorralAssistantSession *self, const char *request);
gboolean assistant_session_has_help_handler (CorralAssistantSession *self);

/* Cards (assistant-card.c) */
CorralAssistantToolCard *assistant_tool_card_new (const CorralLlmBlock *block);

/* The session (assistant-session.c): FALSE when nobody handles ::approval-requested. */
gboolean assistant_session_emit_approval (CorralAssistantSession *self,
                                          CorralAssistantApproval *approval);
void assistant_session_emit_text (CorralAssistantSession *self, const char *text);
void assistant_session_emit_restarted (CorralAssistantSession *self);
void assistant_session_emit_card (CorralAssistantSession *self,
                                  CorralAssistantToolCard *card,
                                  gboolean finished);
void assistant_session_emit_notice (CorralAssistantSession *self, const char *text);

/* The VM's network policy file (assistant-policy.c); blocking, small local files. */
/* "host" or "host:port", validated like a policy rule, no wildcard. (transfer full) */
char *assistant_policy_normalize (const char *host, GError **error);
/* Adds an allow rule to VM_DIR/egress-policy.json; *ret_added: the rule when it was not
 * there before (nullable out). */
gboolean
assistant_policy_allow (const char *vm_dir, const char *host, char **ret_added, GError **error);
/* Removes allow rules that this session added for the task. */
gboolean assistant_policy_remove (const char *vm_dir, GPtrArray *rules, GError **error);
/* A path inside a share: no empty, "." or ".." component, no NUL, not absolute. */
gboolean assistant_rel_path_is_clean (const char *rel);

/* Approvals (assistant-approval.c) */
/* Removes the rules allowed for this task from the VM's policy. */
void assistant_approval_end_task (CorralAssistantSession *self);

G_END_DECLS
