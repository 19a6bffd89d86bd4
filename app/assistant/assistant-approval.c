/* assistant-approval.c — request_approval: the model asks, the person decides, the host acts.
 *
 * The model names one exact thing (a /workspace path to delete, a host[:port] to reach) and a
 * reason. The session emits ::approval-requested; whoever handles it (the app's dialog, the
 * CLI's prompt) answers with corral_assistant_approval_respond(). On approval the host itself does
 * exactly that — the file server deletes the file (corral_shares_approved_delete), or an allow
 * rule goes into the VM's policy file, which the egress daemon follows at once — and the task's
 * audit log records the decision. The guest is never given the power to do it itself.
 *
 * What the person is asked is what the host will do. A delete names the shared folder, its mode
 * and the path inside it, and is tied to the entry the file server found at that path when the
 * question was put (corral_shares_approved_stat): if the guest renames something else onto the
 * path before the answer, the file server refuses. A host on this computer or a local network
 * carries a warning. Text the model wrote is shown escaped, one line, never as markup.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"
#include "assistant-text.h"

#include "egress-addr.h"
#include "egress-policy.h"

#include <glib/gi18n-lib.h>
#include <string.h>

struct _CorralAssistantApproval {
        gatomicrefcount ref;
        CorralAssistantApprovalKind kind;
        char *target;
        char *reason;
        char *share; /* delete */
        char *rel; /* delete: the path inside the share */
        CorralShareEntry *entry; /* delete: what rel named when the person was asked */
        CorralAssistantNetworkScope scope; /* network */
        /* shown to the person: escaped */
        char *shown_reason;
        char *shown_path;
        char *shown_share;
        char *shown_folder;
        char *vm_dir;
        AssistantToolCall *call; /* NULL once answered */
        CorralAssistantAnswer answer;
        char *added_rule; /* network: the rule this approval added */
        gboolean performing; /* approved: the host is doing it; a cancel waits for the end */
        gulong cancel_id;
};

G_DEFINE_BOXED_TYPE (CorralAssistantApproval,
                     corral_assistant_approval,
                     corral_assistant_approval_ref,
                     corral_assistant_approval_unref)

CorralAssistantApproval *
corral_assistant_approval_ref (CorralAssistantApproval *approval)
{
        g_atomic_ref_count_inc (&approval->ref);
        return approval;
}

void
corral_assistant_approval_unref (CorralAssistantApproval *approval)
{
        if (!approval || !g_atomic_ref_count_dec (&approval->ref))
                return;
        g_free (approval->target);
        g_free (approval->reason);
        g_free (approval->share);
        g_free (approval->rel);
        corral_share_entry_free (approval->entry);
        g_free (approval->shown_reason);
        g_free (approval->shown_path);
        g_free (approval->shown_share);
        g_free (approval->shown_folder);
        g_free (approval->vm_dir);
        g_free (approval->added_rule);
        g_free (approval);
}

CorralAssistantApprovalKind
corral_assistant_approval_get_kind (CorralAssistantApproval *approval)
{
        return approval->kind;
}

const char *
corral_assistant_approval_get_target (CorralAssistantApproval *approval)
{
        return approval->target;
}

const char *
corral_assistant_approval_get_reason (CorralAssistantApproval *approval)
{
        return approval->shown_reason;
}

const char *
corral_assistant_approval_get_path (CorralAssistantApproval *approval)
{
        return approval->shown_path;
}

const char *
corral_assistant_approval_get_share_name (CorralAssistantApproval *approval)
{
        return approval->shown_share;
}

const char *
corral_assistant_approval_get_share_folder (CorralAssistantApproval *approval)
{
        return approval->shown_folder;
}

FsMode
corral_assistant_approval_get_share_mode (CorralAssistantApproval *approval)
{
        return approval->entry ? approval->entry->mode : FS_MODE_RO;
}

GFileType
corral_assistant_approval_get_file_type (CorralAssistantApproval *approval)
{
        return approval->entry ? approval->entry->type : G_FILE_TYPE_UNKNOWN;
}

CorralAssistantNetworkScope
corral_assistant_approval_get_network_scope (CorralAssistantApproval *approval)
{
        return approval->scope;
}

const char *
corral_assistant_approval_get_warning (CorralAssistantApproval *approval)
{
        switch (approval->kind == CORRAL_ASSISTANT_APPROVAL_NETWORK
                        ? approval->scope
                        : CORRAL_ASSISTANT_NETWORK_PUBLIC) {
        case CORRAL_ASSISTANT_NETWORK_THIS_COMPUTER:
                return _ ("This is your own computer, not a website. Programs running on it, "
                          "such as databases or Docker, often obey anyone who can reach them, "
                          "which could let the assistant act outside its workspace. Allow this "
                          "only if you know what runs there.");
        case CORRAL_ASSISTANT_NETWORK_LOCAL:
                return _ ("This is an address in your local network or a special-purpose "
                          "address, not a public website. Devices and services there, such as "
                          "routers, printers or cloud settings, often trust anyone who can "
                          "reach them. Allow this only if you know what it is.");
        case CORRAL_ASSISTANT_NETWORK_PUBLIC:
        default:
                return NULL;
        }
}

gboolean
corral_assistant_approval_accepts (CorralAssistantApproval *approval, CorralAssistantAnswer answer)
{
        if (answer == CORRAL_ASSISTANT_ANSWER_DENY)
                return TRUE;
        if (approval->kind == CORRAL_ASSISTANT_APPROVAL_DELETE)
                return answer == CORRAL_ASSISTANT_ANSWER_ALLOW_ONCE;
        return answer == CORRAL_ASSISTANT_ANSWER_ALLOW_TASK ||
               answer == CORRAL_ASSISTANT_ANSWER_ALLOW_ALWAYS;
}

static const char *
answer_name (CorralAssistantAnswer answer)
{
        switch (answer) {
        case CORRAL_ASSISTANT_ANSWER_ALLOW_ONCE:
                return "allow-once";
        case CORRAL_ASSISTANT_ANSWER_ALLOW_TASK:
                return "allow-task";
        case CORRAL_ASSISTANT_ANSWER_ALLOW_ALWAYS:
                return "allow-always";
        case CORRAL_ASSISTANT_ANSWER_DENY:
        default:
                return "deny";
        }
}

static void
audit_decision (CorralAssistantApproval *approval, const char *outcome)
{
        CorralAssistantSession *self = approval->call->session;
        cJSON *rec = cJSON_CreateObject ();

        cJSON_AddStringToObject (rec, "type", "approval");
        cJSON_AddStringToObject (rec, "action",
                                 approval->kind == CORRAL_ASSISTANT_APPROVAL_DELETE ? "delete"
                                                                                    : "network");
        cJSON_AddStringToObject (rec, "target", approval->target);
        if (approval->entry) /* which file the person was asked about */
                cJSON_AddStringToObject (rec, "entry", approval->entry->id);
        cJSON_AddStringToObject (rec, "reason", approval->reason);
        cJSON_AddStringToObject (rec, "answer", answer_name (approval->answer));
        cJSON_AddStringToObject (rec, "outcome", outcome);
        assistant_store_audit (self->store, self->task_number, rec);
}

/* Ends the tool call; the approval stays answered. */
static void
finish (CorralAssistantApproval *approval, char *text, gboolean is_error, const char *outcome)
{
        AssistantToolCall *call = approval->call;

        audit_decision (approval, outcome);
        g_free (call->card->outcome);
        call->card->outcome = g_strdup (outcome);
        approval->call = NULL;
        if (approval->cancel_id)
                g_cancellable_disconnect (call->cancellable, approval->cancel_id);
        approval->cancel_id = 0;
        assistant_tool_call_return (call, text, is_error);
        corral_assistant_approval_unref (approval);
}

/* Performing ------------------------------------------------------------------------------------- */

static void
performed (GObject *source, GAsyncResult *result, gpointer user_data)
{
        CorralAssistantApproval *approval = user_data;
        g_autoptr (GError) error = NULL;

        if (!g_task_propagate_boolean (G_TASK (result), &error)) {
                finish (approval,
                        g_strdup_printf (_ ("The person approved, but the host could not do it: "
                                            "%s"),
                                         error->message),
                        TRUE, "failed");
                return;
        }
        if (approval->kind == CORRAL_ASSISTANT_APPROVAL_DELETE) {
                finish (approval,
                        g_strdup_printf (_ ("The person approved: the host deleted %s (a copy "
                                            "is kept for the person)."),
                                         approval->target),
                        FALSE, "done");
                return;
        }
        if (approval->answer == CORRAL_ASSISTANT_ANSWER_ALLOW_TASK && approval->added_rule)
                g_ptr_array_add (approval->call->session->task_rules,
                                 g_strdup (approval->added_rule));
        finish (approval,
                g_strdup_printf (approval->answer == CORRAL_ASSISTANT_ANSWER_ALLOW_TASK
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
        CorralAssistantApproval *approval = data;
        GError *error = NULL;
        gboolean ok;

        if (approval->kind == CORRAL_ASSISTANT_APPROVAL_DELETE)
                ok = corral_shares_approved_delete (approval->vm_dir, approval->share,
                                                    approval->rel, approval->entry->id, &error);
        else
                ok = assistant_policy_allow (approval->vm_dir, approval->target,
                                             &approval->added_rule, &error);
        if (ok)
                g_task_return_boolean (task, TRUE);
        else
                g_task_return_error (task, error);
}

void
corral_assistant_approval_respond (CorralAssistantApproval *approval, CorralAssistantAnswer answer)
{
        g_autoptr (GTask) task = NULL;

        g_return_if_fail (approval != NULL);
        if (!approval->call)
                return;
        if (!corral_assistant_approval_accepts (approval, answer))
                answer = CORRAL_ASSISTANT_ANSWER_DENY;
        approval->answer = answer;
        if (answer == CORRAL_ASSISTANT_ANSWER_DENY) {
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

/* Cancelling ------------------------------------------------------------------------------------ */

static gboolean
on_cancel_idle (gpointer user_data)
{
        CorralAssistantApproval *approval = user_data;

        if (approval->call && !approval->performing) {
                approval->answer = CORRAL_ASSISTANT_ANSWER_DENY;
                approval->cancel_id = 0; /* a handler cannot disconnect itself from inside */
                finish (approval, g_strdup (_ ("The task was stopped.")), TRUE, "cancelled");
        }
        return G_SOURCE_REMOVE;
}

static void
on_cancelled (GCancellable *cancellable, gpointer user_data)
{
        g_idle_add_full (G_PRIORITY_DEFAULT, on_cancel_idle,
                         corral_assistant_approval_ref (user_data),
                         (GDestroyNotify) corral_assistant_approval_unref);
}

/* What the person sees --------------------------------------------------------------------------- */

#define SHOWN_REASON_MAX 1000

/* The egress proxy's own reading of the host (egress-addr.h), so that the warning and the
 * policy agree on what the target names. */
static CorralAssistantNetworkScope
network_scope (const char *target)
{
        g_autofree char *host = NULL;
        g_autoptr (GInetAddress) addr = NULL;
        CorralHostKind kind;
        guint16 port;

        if (!corral_egress_parse_authority (target, -1, 0, &kind, &host, &port, NULL) &&
            !corral_egress_parse_host (target, -1, TRUE, &kind, &host, NULL))
                return CORRAL_ASSISTANT_NETWORK_LOCAL; /* not expected: the target is a rule */
        if (kind == CORRAL_HOST_NAME)
                return g_str_equal (host, CORRAL_EGRESS_HOST_ALIAS) ||
                                       g_str_equal (host, "localhost") ||
                                       g_str_has_suffix (host, ".localhost")
                               ? CORRAL_ASSISTANT_NETWORK_THIS_COMPUTER
                               : CORRAL_ASSISTANT_NETWORK_PUBLIC;
        addr = g_inet_address_new_from_string (host);
        if (!addr)
                return CORRAL_ASSISTANT_NETWORK_LOCAL;
        if (!corral_egress_addr_classify (addr))
                return CORRAL_ASSISTANT_NETWORK_PUBLIC;
        if (g_inet_address_get_is_loopback (addr) || g_inet_address_get_is_any (addr))
                return CORRAL_ASSISTANT_NETWORK_THIS_COMPUTER;
        return CORRAL_ASSISTANT_NETWORK_LOCAL;
}

/* The request ----------------------------------------------------------------------------------- */

static gboolean
parse_delete (CorralAssistantApproval *approval, const char *path, GError **error)
{
        g_auto (GStrv) parts = NULL;

        if (!g_str_has_prefix (path, "/workspace/")) {
                g_autofree char *shown = assistant_text_escaped (path, SHOWN_REASON_MAX);
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("Only files in the shared folders (/workspace/FOLDER/…) can be "
                                "deleted on approval; %s is the VM's own, delete it yourself."),
                             shown);
                return FALSE;
        }
        parts = g_strsplit (path + strlen ("/workspace/"), "/", 2);
        if (strlen (path) > 4096 || !parts[0] || !parts[1] || !*parts[0] ||
            !assistant_rel_path_is_clean (parts[1])) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("Give the exact path of one file or empty folder, like "
                                "/workspace/FOLDER/notes/old.txt (no “..”, no wildcards)."));
                return FALSE;
        }
        approval->share = g_strdup (parts[0]);
        approval->rel = g_strdup (parts[1]);
        /* "notes/" names the folder notes: the file server takes the name without the slash. */
        if (g_str_has_suffix (approval->rel, "/"))
                approval->rel[strlen (approval->rel) - 1] = '\0';
        approval->shown_share = assistant_text_escaped (approval->share, G_MAXSIZE);
        approval->shown_path = assistant_text_escaped (approval->rel, G_MAXSIZE);
        return TRUE;
}

static CorralAssistantApproval *
approval_new (AssistantToolCall *call,
              const char *action,
              const char *path,
              const char *host,
              const char *reason,
              GError **error)
{
        g_autoptr (CorralAssistantApproval) approval = g_new0 (CorralAssistantApproval, 1);

        g_atomic_ref_count_init (&approval->ref);
        approval->reason = g_utf8_make_valid (reason, -1);
        approval->shown_reason = assistant_text_escaped (reason, SHOWN_REASON_MAX);
        approval->vm_dir = g_strdup (call->session->vm_dir);
        if (g_strcmp0 (action, "delete") == 0 && path) {
                approval->kind = CORRAL_ASSISTANT_APPROVAL_DELETE;
                approval->target = g_utf8_make_valid (path, -1);
                if (!parse_delete (approval, path, error))
                        return NULL;
        } else if (g_strcmp0 (action, "network") == 0 && host) {
                approval->kind = CORRAL_ASSISTANT_APPROVAL_NETWORK;
                approval->target = assistant_policy_normalize (host, error);
                if (!approval->target)
                        return NULL;
                approval->scope = network_scope (approval->target);
        } else {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                     _ ("Use action “delete” with a path, or action “network” "
                                        "with a host."));
                return NULL;
        }
        return g_steal_pointer (&approval);
}

/* Puts the question to whoever handles ::approval-requested (takes approval). */
static void
ask (CorralAssistantApproval *approval, AssistantToolCall *call)
{
        g_autofree char *shown_target = assistant_text_escaped (approval->target, G_MAXSIZE);

        g_free (call->card->title);
        call->card->title = g_strdup_printf (
                "%s %s", approval->kind == CORRAL_ASSISTANT_APPROVAL_DELETE ? "delete" : "network",
                shown_target);
        approval->call = call;
        if (call->cancellable)
                approval->cancel_id =
                        g_cancellable_connect (call->cancellable, G_CALLBACK (on_cancelled),
                                               corral_assistant_approval_ref (approval),
                                               (GDestroyNotify) corral_assistant_approval_unref);
        /* The reference in approval->call's life is dropped by finish(). */
        if (!assistant_session_emit_approval (call->session, approval))
                corral_assistant_approval_respond (approval, CORRAL_ASSISTANT_ANSWER_DENY);
}

static void
identify_in_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
        CorralAssistantApproval *approval = data;
        GError *error = NULL;
        CorralShareEntry *entry = corral_shares_approved_stat (approval->vm_dir, approval->share,
                                                               approval->rel, &error);

        if (entry)
                g_task_return_pointer (task, entry, (GDestroyNotify) corral_share_entry_free);
        else
                g_task_return_error (task, error);
}

static void
identified (GObject *source, GAsyncResult *result, gpointer user_data)
{
        AssistantToolCall *call = user_data;
        CorralAssistantApproval *approval = g_task_get_task_data (G_TASK (result));
        g_autoptr (GError) error = NULL;
        CorralShareEntry *entry = g_task_propagate_pointer (G_TASK (result), &error);

        if (!entry) {
                assistant_tool_call_return (
                        call,
                        g_strdup_printf (_ ("Nothing was asked: the host cannot "
                                            "delete %s: %s"),
                                         approval->shown_path, error->message),
                        TRUE);
                return;
        }
        approval->entry = entry;
        approval->shown_folder = assistant_text_escaped (entry->folder, G_MAXSIZE);
        if (g_cancellable_is_cancelled (call->cancellable)) {
                assistant_tool_call_return (call, g_strdup (_ ("The task was stopped.")), TRUE);
                return;
        }
        ask (corral_assistant_approval_ref (approval), call);
}

void
assistant_tool_request_approval (AssistantToolCall *call)
{
        const char *action = NULL, *path = NULL, *host = NULL, *reason = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GTask) task = NULL;
        CorralAssistantApproval *approval;

        if (!assistant_arg_string (call, "action", TRUE, &action) ||
            !assistant_arg_string (call, "reason", TRUE, &reason) ||
            !assistant_arg_string (call, "path", FALSE, &path) ||
            !assistant_arg_string (call, "host", FALSE, &host))
                return;
        if (!call->session->vm_dir) {
                assistant_tool_call_return (call,
                                            g_strdup (_ ("This session has no sandbox (a local "
                                                         "agent): there is nothing to approve.")),
                                            TRUE);
                return;
        }
        approval = approval_new (call, action, path, host, reason, &error);
        if (!approval) {
                assistant_tool_call_return_error (call, error);
                return;
        }
        if (approval->kind == CORRAL_ASSISTANT_APPROVAL_NETWORK) {
                ask (approval, call);
                return;
        }
        /* Which file the person is asked about comes from the host's file server, never from
         * the guest; a socket call, so off the main thread. */
        task = g_task_new (NULL, NULL, identified, call);
        g_task_set_task_data (task, approval, (GDestroyNotify) corral_assistant_approval_unref);
        g_task_run_in_thread (task, identify_in_thread);
}
