/* corral-assistant-loop.h — the assistant loop: a model, tools that act inside the VM, and the person.
 *
 * A CorralAssistantSession owns one conversation with a model (a CorralLlmProvider), a connected
 * CorralAgentClient to the guest agent of a VM (or a local agent, with no sandbox), an optional
 * CorralMcpManager, and what it knows about the sandbox (VM folder, shares, credential names).
 * For each task the person gives, it streams the model's reply, runs the tools the model calls
 * (inside the VM, never on the host), appends their results and asks again, until the model
 * ends its turn, the step limit is reached or the task is cancelled. Cancelling kills the
 * command that is running in the VM.
 *
 * Signals (all on the thread-default main context of the caller of run_task_async):
 *   ::text-delta (const char *text)                 model text as it streams
 *   ::stream-restarted ()                           a retry: discard the text of this reply
 *   ::tool-started (CorralAssistantToolCard *card)      a tool call begins (name, title, input)
 *   ::tool-finished (CorralAssistantToolCard *card)     ... and ends (output, files, network)
 *   ::approval-requested (CorralAssistantApproval *a)   the model asks the person for something
 *                                                   the sandbox forbids; the handler answers
 *                                                   with corral_assistant_approval_respond(), now
 *                                                   or later. Without a handler: denied.
 *   ::notice (const char *text)                     loop remarks (continuing after the output
 *                                                   limit, step limit reached, ...)
 *   ::help-requested (const char *request)          computer use: the model asks the person to
 *                                                   take the screen (a sign-in, a CAPTCHA);
 *                                                   request is its words, escaped; NULL when it
 *                                                   no longer asks (given back, declined, timed
 *                                                   out, cancelled). The person answers by taking
 *                                                   the screen and giving it back, or with
 *                                                   corral_assistant_session_decline_help().
 *                                                   Without a handler, no one is asked.
 *
 * Sessions persist under $XDG_STATE_HOME/corral/sessions/ID/ (assistant-store.h says what is there)
 * and can be resumed with corral_assistant_session_resume().
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include "corral-agent-client.h"
#include "corral-computer.h"
#include "corral-llm.h"
#include "corral-mcp.h"
#include "corral-shares.h"

G_BEGIN_DECLS

#define CORRAL_ASSISTANT_DEFAULT_MAX_STEPS 50
#define CORRAL_ASSISTANT_DEFAULT_MAX_TOKENS 8192

/* Tool cards: what the UI shows for one tool call ------------------------------------------ */

typedef struct {
        char *tool_id; /* the model's call id */
        char *tool; /* the tool's name */
        char *title; /* one line for people: "ls -la", "notes.txt", "mcp: files__read" */
        char *input_json; /* the arguments as the model sent them */
        char *command; /* (nullable) shell: the command */
        char *output; /* (nullable) once finished: the result as the model sees it */
        int exit_code; /* shell: -1 unless it exited normally */
        int term_signal; /* shell: 0 unless a signal ended it */
        gboolean timed_out; /* shell */
        gboolean is_error; /* the result is an error */
        gboolean finished;
        GPtrArray *files_read; /* (element-type utf8) VM paths */
        GPtrArray *files_changed; /* (element-type utf8) VM paths, and shares' changes */
        GPtrArray *network; /* (element-type utf8) "GET example.com:443 allowed (rule)" */
        GPtrArray *blocked; /* (element-type utf8) what the sandbox refused, explained */
        gint64 duration_us;
        /* (nullable) request_approval: the person's answer and what came of it ("denied",
         * "done", "failed", "cancelled"), as the audit log records it */
        char *outcome;
        /* (nullable) computer: the screenshot the action returned (what the model saw), its
         * size, and where the action pointed on it, to mark for the person */
        GBytes *image;
        char *image_media_type;
        guint image_width, image_height;
        gboolean has_point;
        guint point_x, point_y;
} CorralAssistantToolCard;

#define CORRAL_TYPE_ASSISTANT_TOOL_CARD (corral_assistant_tool_card_get_type ())
GType corral_assistant_tool_card_get_type (void);
CorralAssistantToolCard *corral_assistant_tool_card_ref (CorralAssistantToolCard *card);
void corral_assistant_tool_card_unref (CorralAssistantToolCard *card);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralAssistantToolCard, corral_assistant_tool_card_unref)

/* Approvals ----------------------------------------------------------------------------------- */

typedef enum {
        CORRAL_ASSISTANT_APPROVAL_DELETE, /* target: a /workspace path */
        CORRAL_ASSISTANT_APPROVAL_NETWORK, /* target: host or host:port */
} CorralAssistantApprovalKind;

typedef enum {
        CORRAL_ASSISTANT_ANSWER_DENY,
        CORRAL_ASSISTANT_ANSWER_ALLOW_ONCE, /* delete: this one file */
        CORRAL_ASSISTANT_ANSWER_ALLOW_TASK, /* network: until the task ends */
        CORRAL_ASSISTANT_ANSWER_ALLOW_ALWAYS, /* network: a permanent rule in the VM's policy */
} CorralAssistantAnswer;

typedef struct _CorralAssistantApproval CorralAssistantApproval;

#define CORRAL_TYPE_ASSISTANT_APPROVAL (corral_assistant_approval_get_type ())
GType corral_assistant_approval_get_type (void);
CorralAssistantApproval *corral_assistant_approval_ref (CorralAssistantApproval *approval);
void corral_assistant_approval_unref (CorralAssistantApproval *approval);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralAssistantApproval, corral_assistant_approval_unref)

/* Where a network approval leads: a public site, or somewhere that usually trusts whoever
 * reaches it (the person is warned). */
typedef enum {
        CORRAL_ASSISTANT_NETWORK_PUBLIC, /* a name, or a public address */
        CORRAL_ASSISTANT_NETWORK_THIS_COMPUTER, /* the host alias, localhost, a loopback address */
        CORRAL_ASSISTANT_NETWORK_LOCAL, /* private, link-local, shared, metadata, other non-public */
} CorralAssistantNetworkScope;

CorralAssistantApprovalKind corral_assistant_approval_get_kind (CorralAssistantApproval *approval);
/* The exact thing asked for, as the model wrote it (normalised for a host), for the model and
 * the logs: "/workspace/proj/old.txt" or "api.example.com:443". Show people the getters below.
 */
const char *corral_assistant_approval_get_target (CorralAssistantApproval *approval);

/* What the person is shown. Every string that the model or the guest chose is escaped:
 * control characters, newlines, line separators and invisible format characters (bidi
 * controls, zero-width characters) appear as \n, \t, \x1b, \u202E..., so each is one line
 * that cannot move a terminal's cursor, reorder the text after it or imitate the question
 * around it. Plain text: never markup. (transfer none) */

/* The model's reason, escaped and cut to 1000 characters. */
const char *corral_assistant_approval_get_reason (CorralAssistantApproval *approval);
/* Delete: the path inside the shared folder ("notes/old.txt"), escaped. NULL for network. */
const char *corral_assistant_approval_get_path (CorralAssistantApproval *approval);
/* Delete: the shared folder's name (/workspace/NAME in the VM) and its folder on this
 * computer, escaped; how it is shared; what the path is (G_FILE_TYPE_REGULAR, _DIRECTORY or
 * _SYMBOLIC_LINK). The file server reported them when the approval was requested; it deletes
 * only that same file, link or folder. NULL, FS_MODE_RO and G_FILE_TYPE_UNKNOWN for network. */
const char *corral_assistant_approval_get_share_name (CorralAssistantApproval *approval);
const char *corral_assistant_approval_get_share_folder (CorralAssistantApproval *approval);
FsMode corral_assistant_approval_get_share_mode (CorralAssistantApproval *approval);
GFileType corral_assistant_approval_get_file_type (CorralAssistantApproval *approval);
/* Network: where the host leads (PUBLIC for delete). */
CorralAssistantNetworkScope
corral_assistant_approval_get_network_scope (CorralAssistantApproval *approval);
/* A warning in words for people (translated), or NULL: for a network approval that leads to
 * this computer or a local network. */
const char *corral_assistant_approval_get_warning (CorralAssistantApproval *approval);
/* The answers that make sense for this kind (ALLOW_ONCE for delete; TASK/ALWAYS for network). */
gboolean corral_assistant_approval_accepts (CorralAssistantApproval *approval,
                                            CorralAssistantAnswer answer);
/* Answers once; later answers (and answers after the task was cancelled) are ignored. An
 * answer this kind does not accept counts as DENY. */
void corral_assistant_approval_respond (CorralAssistantApproval *approval,
                                        CorralAssistantAnswer answer);

/* The session ----------------------------------------------------------------------------------- */

typedef enum {
        CORRAL_ASSISTANT_STOP_DONE, /* the model ended its turn */
        CORRAL_ASSISTANT_STOP_STEP_LIMIT, /* max_steps model replies without an end */
        CORRAL_ASSISTANT_STOP_REFUSAL, /* the model refused */
} CorralAssistantStop;

typedef struct {
        CorralAssistantStop stop;
        guint steps; /* model replies in this task */
        guint tool_calls;
        CorralLlmUsage usage; /* summed over the task */
        char *final_text; /* the text of the last reply */
} CorralAssistantTaskResult;

void corral_assistant_task_result_free (CorralAssistantTaskResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralAssistantTaskResult, corral_assistant_task_result_free)

#define CORRAL_TYPE_ASSISTANT_SESSION (corral_assistant_session_get_type ())
G_DECLARE_FINAL_TYPE (
        CorralAssistantSession, corral_assistant_session, CORRAL, ASSISTANT_SESSION, GObject)

/* A new session (a fresh id; nothing is written before the first task). client: connected.
 * (transfer full) */
CorralAssistantSession *corral_assistant_session_new (CorralLlmProvider *provider,
                                                      CorralAgentClient *client,
                                                      const char *model);
/* Reopens session id from its transcript (the conversation is rebuilt). (transfer full) */
CorralAssistantSession *corral_assistant_session_resume (const char *id,
                                                         CorralLlmProvider *provider,
                                                         CorralAgentClient *client,
                                                         const char *model,
                                                         GError **error);

const char *corral_assistant_session_get_id (CorralAssistantSession *self);
/* (transfer none) the session's folder */
const char *corral_assistant_session_get_dir (CorralAssistantSession *self);
/* (transfer none) the conversation so far */
const CorralLlmConversation *
corral_assistant_session_get_conversation (CorralAssistantSession *self);

/* The VM: name and folder (VM_DIR: audit.jsonl, egress.jsonl, egress-policy.json, the file
 * server). Both NULL (the default) means a local agent: no sandbox, and the model is told so. */
void corral_assistant_session_set_vm (CorralAssistantSession *self,
                                      const char *name,
                                      const char *vm_dir);
/* (nullable) (transfer none) the VM's folder, NULL for a local agent. */
const char *corral_assistant_session_get_vm_dir (CorralAssistantSession *self);
/* (element-type CorralShare) (transfer none): copied. */
void corral_assistant_session_set_shares (CorralAssistantSession *self, GPtrArray *shares);
/* Names of the credentials the VM's commands see as environment variables (never values). */
void corral_assistant_session_set_credential_names (CorralAssistantSession *self,
                                                    const char *const *names);
void corral_assistant_session_set_mcp_manager (CorralAssistantSession *self,
                                               CorralMcpManager *manager);
/* Computer use for this session's tasks (off, NULL, by default; the person turns it on): the
 * "computer" tool on computer's screen (a connected CorralComputer, referenced). Offered to
 * Anthropic models as their computer tool (computer_20250124), to others as a function tool
 * with the same actions; each call's screenshot goes back to the model and onto its card. */
void corral_assistant_session_set_computer (CorralAssistantSession *self, CorralComputer *computer);
/* The person will not take the screen now: the model's ask_for_help returns and says so. */
void corral_assistant_session_decline_help (CorralAssistantSession *self);
void corral_assistant_session_set_max_steps (CorralAssistantSession *self, guint max_steps);
/* The shell tool: default and maximum timeout, and how much output the model sees (head and
 * tail of this many bytes each; the middle is cut with a note). Defaults 120 s, 1800 s, 8 KiB. */
void corral_assistant_session_set_shell_limits (CorralAssistantSession *self,
                                                guint default_timeout_s,
                                                guint max_timeout_s,
                                                gsize output_head_tail);

/* The person's task setting: the shell tool's commands run without the VM's second wall
 * (seccomp filter, Landlock; SECURITY.md A7, A8, A10). Off by default; nothing the model sends
 * changes it. */
void corral_assistant_session_set_unconfined_commands (CorralAssistantSession *self,
                                                       gboolean unconfined);
gboolean corral_assistant_session_get_unconfined_commands (CorralAssistantSession *self);

/* Runs one task. Fails with G_IO_ERROR_CANCELLED when cancelled (the running command is killed),
 * with the provider's CORRAL_LLM_ERROR when the model cannot be reached, with
 * G_IO_ERROR_BUSY while another task runs. */
/* text: the person's words; "" goes on with the conversation as it is (after a task that ended
 * on a passing failure, corral_llm_error_is_transient). */
void corral_assistant_session_run_task_async (CorralAssistantSession *self,
                                              const char *text,
                                              GCancellable *cancellable,
                                              GAsyncReadyCallback callback,
                                              gpointer user_data);
CorralAssistantTaskResult *corral_assistant_session_run_task_finish (CorralAssistantSession *self,
                                                                     GAsyncResult *result,
                                                                     GError **error);

/* What a stored tool result says about its call, for showing an earlier conversation again:
 * *ret_exit_code is the shell's exit status at the end of its output (-1 without one), and
 * *ret_blocked (transfer full, element-type utf8) every refusal of the sandbox explained in it.
 * It recognises the texts this library writes (in the current language). */
void
corral_assistant_result_describe (const char *text, int *ret_exit_code, GPtrArray **ret_blocked);

/* The system prompt the next task would use (for tests and the UI's "what the agent knows").
 * (transfer full) */
char *corral_assistant_session_build_system_prompt (CorralAssistantSession *self);

G_END_DECLS
