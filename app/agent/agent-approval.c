/* agent-approval.c — request_approval: the model asks, the person decides, the host acts.
 *
 * The model names one exact thing (a /workspace path to delete, a host[:port] to reach) and a
 * reason. The session emits ::approval-requested; whoever handles it (the app's dialog, the
 * CLI's prompt) answers with corral_agent_approval_respond(). On approval the host itself does
 * exactly that — the file server deletes the file (corral_shares_approved_delete), or an allow
 * rule goes into the VM's policy file, which the egress daemon follows at once — and the task's
 * audit log records the decision. The guest is never given the power to do it itself.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "agent-private.h"

#include <glib/gi18n-lib.h>
#include <string.h>

struct _CorralAgentApproval {
        gatomicrefcount ref;
        CorralAgentApprovalKind kind;
        char *target;
        char *reason;
        char *share; /* delete */
        char *rel; /* delete: the path inside the share */
        char *vm_dir;
        AgentToolCall *call; /* NULL once answered */
        CorralAgentAnswer answer;
        char *added_rule; /* network: the rule this approval added */
        gboolean performing; /* approved: the host is doing it; a cancel waits for the end */
        gulong cancel_id;
};

G_DEFINE_BOXED_TYPE (CorralAgentApproval,
                     corral_agent_approval,
                     corral_agent_approval_ref,
                     corral_agent_approval_unref)

CorralAgentApproval *
corral_agent_approval_ref (CorralAgentApproval *approval)
{
        g_atomic_ref_count_inc (&approval->ref);
        return approval;
}

void
corral_agent_approval_unref (CorralAgentApproval *approval)
{
        if (!approval || !g_atomic_ref_count_dec (&approval->ref))
                return;
        g_free (approval->target);
        g_free (approval->reason);
        g_free (approval->share);
        g_free (approval->rel);
        g_free (approval->vm_dir);
        g_free (approval->added_rule);
        g_free (approval);
}

CorralAgentApprovalKind
corral_agent_approval_get_kind (CorralAgentApproval *approval)
{
        return approval->kind;
}

const char *
corral_agent_approval_get_target (CorralAgentApproval *approval)
{
        return approval->target;
}

const char *
corral_agent_approval_get_reason (CorralAgentApproval *approval)
{
        return approval->reason;
}

gboolean
corral_agent_approval_accepts (CorralAgentApproval *approval, CorralAgentAnswer answer)
{
        if (answer == CORRAL_AGENT_ANSWER_DENY)
                return TRUE;
        if (approval->kind == CORRAL_AGENT_APPROVAL_DELETE)
                return answer == CORRAL_AGENT_ANSWER_ALLOW_ONCE;
        return answer == CORRAL_AGENT_ANSWER_ALLOW_TASK ||
               answer == CORRAL_AGENT_ANSWER_ALLOW_ALWAYS;
}

static const char *
answer_name (CorralAgentAnswer answer)
{
        switch (answer) {
        case CORRAL_AGENT_ANSWER_ALLOW_ONCE:
                return "allow-once";
        case CORRAL_AGENT_ANSWER_ALLOW_TASK:
                return "allow-task";
        case CORRAL_AGENT_ANSWER_ALLOW_ALWAYS:
                return "allow-always";
        case CORRAL_AGENT_ANSWER_DENY:
        default:
                return "deny";
        }
}

static void
audit_decision (CorralAgentApproval *approval, const char *outcome)
{
        CorralAgentSession *self = approval->call->session;
        cJSON *rec = cJSON_CreateObject ();

        cJSON_AddStringToObject (rec, "type", "approval");
        cJSON_AddStringToObject (rec, "action",
                                 approval->kind == CORRAL_AGENT_APPROVAL_DELETE ? "delete"
                                                                                : "network");
        cJSON_AddStringToObject (rec, "target", approval->target);
        cJSON_AddStringToObject (rec, "reason", approval->reason);
        cJSON_AddStringToObject (rec, "answer", answer_name (approval->answer));
        cJSON_AddStringToObject (rec, "outcome", outcome);
        agent_store_audit (self->store, self->task_number, rec);
}

/* Ends the tool call; the approval stays answered. */
static void
finish (CorralAgentApproval *approval, char *text, gboolean is_error, const char *outcome)
{
        AgentToolCall *call = approval->call;

        audit_decision (approval, outcome);
        approval->call = NULL;
        if (approval->cancel_id)
                g_cancellable_disconnect (call->cancellable, approval->cancel_id);
        approval->cancel_id = 0;
        agent_tool_call_return (call, text, is_error);
        corral_agent_approval_unref (approval);
}

/* Performing ------------------------------------------------------------------------------------- */

static void
performed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        CorralAgentApproval *approval = user_data;
        g_autoptr (GError) error = NULL;

        if (!g_task_propagate_boolean (G_TASK (result), &error)) {
                finish (approval,
                        g_strdup_printf (_ ("The person approved, but the host could not do it: "
                                            "%s"),
                                         error->message),
                        TRUE, "failed");
                return;
        }
        if (approval->kind == CORRAL_AGENT_APPROVAL_DELETE) {
                finish (approval,
                        g_strdup_printf (_ ("The person approved: the host deleted %s (a copy "
                                            "is kept for the person)."),
                                         approval->target),
                        FALSE, "done");
                return;
        }
        if (approval->answer == CORRAL_AGENT_ANSWER_ALLOW_TASK && approval->added_rule)
                g_ptr_array_add (approval->call->session->task_rules,
                                 g_strdup (approval->added_rule));
        finish (approval,
                g_strdup_printf (approval->answer == CORRAL_AGENT_ANSWER_ALLOW_TASK
                                         ? _ ("The person approved: %s is allowed until this "
                                              "task ends. Try the request again.")
                                         : _ ("The person approved: %s is allowed from now on. "
                                              "Try the request again."),
                                 approval->target),
                FALSE, "done");
}

static void
perform_in_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralAgentApproval *approval = data;
        GError *error = NULL;
        gboolean ok;

        if (approval->kind == CORRAL_AGENT_APPROVAL_DELETE)
                ok = corral_shares_approved_delete (approval->vm_dir, approval->share,
                                                    approval->rel, &error);
        else
                ok = agent_policy_allow (approval->vm_dir, approval->target, &approval->added_rule,
                                         &error);
        if (ok)
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

void
corral_agent_approval_respond (CorralAgentApproval *approval, CorralAgentAnswer answer)
{
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (approval != NULL);
        if (!approval->call)
                return;
        if (!corral_agent_approval_accepts (approval, answer))
                answer = CORRAL_AGENT_ANSWER_DENY;
        approval->answer = answer;
        if (answer == CORRAL_AGENT_ANSWER_DENY) {
                finish (approval,
                        g_strdup_printf (_ ("The person declined: %s was not done. Do not try "
                                            "another way; carry on without it or ask them what "
                                            "they prefer."),
                                         approval->target),
                        TRUE, "denied");
                return;
        }
        /* The file server's control socket and the policy file: blocking, so off the main
         * thread. The approval is kept alive by the task. */
        approval->performing = TRUE;
        task = g_task_new (NULL, NULL, performed, approval);
        g_task_set_task_data (task, approval, NULL);
        g_task_run_in_thread (task, perform_in_thread);
}

/* The request ----------------------------------------------------------------------------------- */

static gboolean
on_cancel_idle (gpointer user_data)
{
        CorralAgentApproval *approval = user_data;

        if (approval->call && !approval->performing) {
                approval->answer = CORRAL_AGENT_ANSWER_DENY;
                approval->cancel_id = 0; /* a handler cannot disconnect itself from inside */
                finish (approval, g_strdup (_ ("The task was stopped.")), TRUE, "cancelled");
        }
        return G_SOURCE_REMOVE;
}

static void
on_cancelled (GCancellable *cancellable, gpointer user_data)
{
        g_idle_add_full (G_PRIORITY_DEFAULT, on_cancel_idle, corral_agent_approval_ref (user_data),
                         (GDestroyNotify) corral_agent_approval_unref);
}

static gboolean
parse_delete (CorralAgentApproval *approval, const char *path, GError **error)
{
        g_auto (GStrv) parts = NULL;

        if (!g_str_has_prefix (path, "/workspace/")) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("Only files in the shared folders (/workspace/FOLDER/…) can be "
                                "deleted on approval; %s is the VM's own, delete it yourself."),
                             path);
                return FALSE;
        }
        parts = g_strsplit (path + strlen ("/workspace/"), "/", 2);
        if (!parts[0] || !parts[1] || !*parts[0] || !agent_rel_path_is_clean (parts[1])) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("Give the exact path of one file or empty folder, like "
                                "/workspace/FOLDER/notes/old.txt (no “..”, no wildcards)."));
                return FALSE;
        }
        approval->share = g_strdup (parts[0]);
        approval->rel = g_strdup (parts[1]);
        return TRUE;
}

static CorralAgentApproval *
approval_new (AgentToolCall *call,
              const char *action,
              const char *path,
              const char *host,
              const char *reason,
              GError **error)
{
        g_autoptr (CorralAgentApproval) approval = g_new0 (CorralAgentApproval, 1);

        g_atomic_ref_count_init (&approval->ref);
        approval->reason = g_utf8_make_valid (reason, -1);
        approval->vm_dir = g_strdup (call->session->vm_dir);
        if (g_strcmp0 (action, "delete") == 0 && path) {
                approval->kind = CORRAL_AGENT_APPROVAL_DELETE;
                approval->target = g_strdup (path);
                if (!parse_delete (approval, path, error))
                        return NULL;
        } else if (g_strcmp0 (action, "network") == 0 && host) {
                approval->kind = CORRAL_AGENT_APPROVAL_NETWORK;
                approval->target = agent_policy_normalize (host, error);
                if (!approval->target)
                        return NULL;
        } else {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     _ ("Use action “delete” with a path, or action “network” "
                                        "with a host."));
                return NULL;
        }
        return g_steal_pointer (&approval);
}

void
agent_tool_request_approval (AgentToolCall *call)
{
        const char *action = NULL, *path = NULL, *host = NULL, *reason = NULL;
        g_autoptr (GError) error = NULL;
        CorralAgentApproval *approval;

        if (!agent_arg_string (call, "action", TRUE, &action) ||
            !agent_arg_string (call, "reason", TRUE, &reason) ||
            !agent_arg_string (call, "path", FALSE, &path) ||
            !agent_arg_string (call, "host", FALSE, &host))
                return;
        if (!call->session->vm_dir) {
                agent_tool_call_return (call,
                                        g_strdup (_ ("This session has no sandbox (a local "
                                                     "agent): there is nothing to approve.")),
                                        TRUE);
                return;
        }
        approval = approval_new (call, action, path, host, reason, &error);
        if (!approval) {
                agent_tool_call_return_error (call, error);
                return;
        }
        g_free (call->card->title);
        call->card->title = g_strdup_printf ("%s %s", action, approval->target);
        approval->call = call;
        if (call->cancellable)
                approval->cancel_id =
                        g_cancellable_connect (call->cancellable, G_CALLBACK (on_cancelled),
                                               corral_agent_approval_ref (approval),
                                               (GDestroyNotify) corral_agent_approval_unref);
        /* The reference in approval->call's life is dropped by finish(). */
        if (!agent_session_emit_approval (call->session, approval))
                corral_agent_approval_respond (approval, CORRAL_AGENT_ANSWER_DENY);
}
