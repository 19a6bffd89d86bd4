/* agent-private.h — what the parts of the agent loop share (not installed, not public).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-loop.h"

#include "agent-sandbox-log.h"
#include "agent-store.h"

G_BEGIN_DECLS

struct _CorralAgentSession {
        GObject parent_instance;

        CorralLlmProvider *provider;
        CorralAgentClient *client;
        CorralMcpManager *mcp;
        CorralLlmConversation *conv;
        AgentStore *store;

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

/* Tool calls (agent-tools.c) ------------------------------------------------------------------ */

typedef struct {
        CorralAgentSession *session; /* not owned: the session outlives its tasks */
        CorralAgentToolCard *card;
        cJSON *input; /* a copy of the block's input: an object */
        GCancellable *cancellable;
        GTask *task;
        gint64 started_us;
        AgentLogMark mark;
        gboolean returned;
} AgentToolCall;

/* The tools offered to the model (built-ins and the MCP manager's), written into conv. */
void agent_tools_describe (CorralAgentSession *self, CorralLlmConversation *conv);

/* Runs the tool named in block. Always completes with a result for the model (errors are
 * results too); only cancellation fails. The card is filled as it goes. */
void agent_tools_run_async (CorralAgentSession *self,
                            const CorralLlmBlock *block,
                            CorralAgentToolCard *card,
                            GCancellable *cancellable,
                            GAsyncReadyCallback callback,
                            gpointer user_data);
gboolean agent_tools_run_finish (GAsyncResult *result, GError **error);

/* Completes the call with text for the model (takes it). */
void agent_tool_call_return (AgentToolCall *call, char *text, gboolean is_error);
/* The exit status in the shell tool's last line of a result ("[exit status N]"), or -1. */
int agent_shell_parse_status (const char *line, gsize len);
void agent_tool_call_return_error (AgentToolCall *call, const GError *error);

/* Argument helpers: on a missing or mistyped argument they complete the call with an error
 * the model can act on and return FALSE. An optional argument that is absent leaves *ret. */
gboolean
agent_arg_string (AgentToolCall *call, const char *name, gboolean required, const char **ret);
gboolean agent_arg_int (AgentToolCall *call,
                        const char *name,
                        gint64 min,
                        gint64 max,
                        gboolean required,
                        gint64 *ret);
/* A VM path: absolute, no NUL; completes the call with an error otherwise. */
gboolean agent_arg_path (AgentToolCall *call, const char **ret);

/* The tools themselves. */
void agent_tool_shell (AgentToolCall *call);
void agent_tool_view (AgentToolCall *call);
void agent_tool_create (AgentToolCall *call);
void agent_tool_str_replace (AgentToolCall *call);
void agent_tool_insert (AgentToolCall *call);
void agent_tool_request_approval (AgentToolCall *call);
void agent_tool_mcp (AgentToolCall *call);

/* Cards (agent-card.c) */
CorralAgentToolCard *agent_tool_card_new (const CorralLlmBlock *block);

/* The session (agent-session.c): FALSE when nobody handles ::approval-requested. */
gboolean agent_session_emit_approval (CorralAgentSession *self, CorralAgentApproval *approval);
void agent_session_emit_text (CorralAgentSession *self, const char *text);
void agent_session_emit_restarted (CorralAgentSession *self);
void
agent_session_emit_card (CorralAgentSession *self, CorralAgentToolCard *card, gboolean finished);
void agent_session_emit_notice (CorralAgentSession *self, const char *text);

/* The VM's network policy file (agent-policy.c); blocking, small local files. */
/* "host" or "host:port", validated like a policy rule, no wildcard. (transfer full) */
char *agent_policy_normalize (const char *host, GError **error);
/* Adds an allow rule to VM_DIR/egress-policy.json; *ret_added: the rule when it was not
 * there before (nullable out). */
gboolean
agent_policy_allow (const char *vm_dir, const char *host, char **ret_added, GError **error);
/* Removes allow rules that this session added for the task. */
gboolean agent_policy_remove (const char *vm_dir, GPtrArray *rules, GError **error);
/* A path inside a share: no empty, "." or ".." component, no NUL, not absolute. */
gboolean agent_rel_path_is_clean (const char *rel);

/* Approvals (agent-approval.c) */
/* Removes the rules allowed for this task from the VM's policy. */
void agent_approval_end_task (CorralAgentSession *self);

G_END_DECLS
