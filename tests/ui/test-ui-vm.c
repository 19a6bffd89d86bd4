/* test-ui-vm.c — the real app, end to end: the window with the real launcher boots a minimal VM
 * through libvirt, shares a folder "Can edit, but not delete", and the chat runs the real agent
 * loop against the fake model provider (in-process, real Anthropic wire format): the model
 * creates a file (it appears on the host), its rm is refused by the sandbox, it asks to delete,
 * the approval dialog shows and nothing is deleted until the person allows it; then it asks for
 * a network host and the network dialog shows. Then the app closes (the VM pauses), opens again
 * and reopens the task from the list of tasks (the VM resumes, the conversation is back); then the
 * VM is removed with corralctl and reopening the task makes it again, same folder and mode, and
 * the conversation goes on. Last, a new task's folder page boots a workspace ahead
 * (corral-warm-workspace.h), Start takes it, and releasing removes the next one not taken.
 *
 * Suites vm and ui (it boots a VM; it needs a display, Xvfb when there is none).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>
#include <glib/gstdio.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "corral-computer.h"
#include "corral-resources.h"
#include "corral-screen-panel.h"
#include "corral-shares.h"
#include "corral-vm-launcher.h"
#include "corral-vm-manager.h"
#include "corral-vm-pool.h"
#include "corral-window.h"
#include "egress-test.h"
#include "fake-llm-server.h"
#include "ui-test-util.h"

#define STATE_DIR "/tmp/corral-ui-vm"

static void
push_tool (CorralFakeLlmServer *fake, const char *id, const char *tool, const char *input)
{
        corral_fake_llm_server_push (
                fake, corral_fake_llm_anthropic_reply (NULL, id, tool, input, "tool_use"));
}

/* The model provider the app talks to: the fake one. */
static void
use_fake_model (CorralFakeLlmServer *fake)
{
        g_autofree char *url = corral_fake_llm_server_get_url (fake);

        g_setenv ("ANTHROPIC_BASE_URL", url, TRUE);
        g_setenv ("ANTHROPIC_API_KEY", "test-key", TRUE);
}

/* The app's window, shown at the size the screenshots are taken at. */
static CorralWindow *
open_window (CorralLauncher *launcher, GSettings *settings)
{
        CorralWindow *window = corral_window_new (NULL, launcher, settings);

        gtk_window_set_default_size (GTK_WINDOW (window), 1100, 760);
        gtk_window_present (GTK_WINDOW (window));
        ui_test_spin (300);
        return window;
}

static gboolean
page_is (gpointer data)
{
        void **args = data;
        return g_strcmp0 (corral_window_get_page (args[0]), args[1]) == 0;
}

static gboolean
has_source (gpointer data)
{
        return corral_chat_view_get_source (data) != NULL;
}

static gboolean
has_dialog (gpointer data)
{
        return corral_chat_view_get_approval_dialog (data) != NULL;
}

static gboolean
not_busy (gpointer data)
{
        return !corral_chat_view_get_busy (data);
}

static gboolean
file_exists (gpointer data)
{
        return g_file_test (data, G_FILE_TEST_EXISTS);
}

static void
answer (CorralChatView *chat, const char *response)
{
        AdwMessageDialog *d = ADW_MESSAGE_DIALOG (corral_chat_view_get_approval_dialog (chat));

        adw_message_dialog_response (d, response);
        gtk_window_destroy (GTK_WINDOW (d));
        ui_test_spin (50);
}

/* The app starts again and the task is opened from the list of tasks; its row says state. */
static CorralWindow *
reopen (CorralLauncher *launcher, GSettings *settings, const char *state)
{
        CorralWindow *window = open_window (launcher, settings);
        /* Named after the person's first request (the assistant source names it). */
        void *row[] = { window, (void *) "Tidy up this folder", NULL };
        void *session_page[] = { window, (void *) "session" };
        CorralChatView *chat;

        corral_window_show_tasks (window);
        g_assert_true (ui_test_wait (ui_test_row_listed, row, 30 * 1000));
        g_assert_nonnull (strstr (adw_action_row_get_subtitle (row[2]), state));
        adw_action_row_activate (row[2]);
        if (!ui_test_wait (page_is, session_page, 600 * 1000))
                g_error ("the task did not reopen (page %s)", corral_window_get_page (window));
        chat = corral_session_view_get_chat (corral_window_get_session_view (window));
        g_assert_true (ui_test_wait (has_source, chat, 60 * 1000));
        ui_test_spin (300);
        /* The conversation so far: the person's words, the four tool calls, the reply. */
        g_assert_nonnull (ui_test_find (GTK_WIDGET (window), GTK_ACCESSIBLE_ROLE_LABEL,
                                        "Tidy up this folder"));
        g_assert_cmpuint (corral_chat_view_get_n_tool_cards (chat), >=, 4);
        return window;
}

static gboolean
dialog_shown (gpointer window)
{
        return corral_window_get_close_dialog (window) != NULL;
}

/* Removes every VM this test's state folder holds (the launcher names them per task), its
 * file servers and the folder. ("connec[t]": a pattern that does not match this very shell,
 * which pkill would otherwise kill before the rm.) */
static void
cleanup_vms (void)
{
        g_autofree char *ctl =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_autofree char *cmd = g_strdup_printf (
                "sh -c \"for vm in $('%s' vm ls 2>/dev/null | awk 'NR > 1 { print $1 }'); do "
                "'%s' vm destroy $vm; '%s' vm rm $vm; done; pkill -f 'connec[t] %s'; "
                "rm -rf '%s'\"",
                ctl, ctl, ctl, STATE_DIR, STATE_DIR);

        g_spawn_command_line_sync (cmd, NULL, NULL, NULL, NULL);
}

static void
got_result (GObject *source, GAsyncResult *res, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (res);
}

static GAsyncResult *
wait_result (GAsyncResult **res)
{
        while (!*res)
                g_main_context_iteration (NULL, TRUE);
        return *res;
}

/* The VM's state, through the app's own libvirt connection (the embedded driver admits one
 * process: corralctl cannot open it while the app runs). */
static CorralVmState
vm_state (CorralVmLauncher *launcher, const char *vm_name)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        CorralVmManager *manager = corral_vm_launcher_get_manager (launcher);

        g_assert_nonnull (manager);
        corral_vm_manager_lookup_async (manager, vm_name, NULL, got_result, &res);
        info = corral_vm_manager_lookup_finish (manager, wait_result (&res), &error);
        g_assert_no_error (error);
        return info->state;
}

static gboolean
vm_paused (gpointer data)
{
        void **args = data;

        ui_test_spin (200);
        return vm_state (args[0], args[1]) == CORRAL_VM_STATE_PAUSED;
}

/* As `corralctl vm rm` does it: destroyed, undefined, its folder deleted. */
static void
remove_vm (CorralVmLauncher *launcher, const char *vm_name)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GAsyncResult) looked = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        CorralVmManager *manager = corral_vm_launcher_get_manager (launcher);

        corral_vm_manager_op_async (manager, vm_name, CORRAL_VM_OP_REMOVE, NULL, got_result, &res);
        g_assert_true (corral_vm_manager_op_finish (manager, wait_result (&res), &error));
        g_assert_no_error (error);
        corral_vm_manager_lookup_async (manager, vm_name, NULL, got_result, &looked);
        info = corral_vm_manager_lookup_finish (manager, wait_result (&looked), &error);
        g_assert_null (info);
        g_assert_error (error, CORRAL_VM_ERROR, CORRAL_VM_ERROR_NO_SUCH_VM);
}

/* The task's workspace is a warm-pool VM (corral-warm-workspace.h) handed out under the
 * task's name. Returns the pool VM's own name. */
static char *
assert_warm (CorralVmLauncher *launcher, const char *vm_name)
{
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralVmInfo) info = NULL;
        CorralVmManager *manager = corral_vm_launcher_get_manager (launcher);

        corral_vm_manager_lookup_async (manager, vm_name, NULL, got_result, &res);
        info = corral_vm_manager_lookup_finish (manager, wait_result (&res), &error);
        g_assert_no_error (error);
        g_assert_true (g_str_has_prefix (info->name, CORRAL_POOL_VM_PREFIX));
        g_assert_cmpstr (info->alias, ==, vm_name);
        return g_strdup (info->name);
}

/* The pool VMs in a state (NULL: any). */
static guint
count_pool_vms (CorralVmLauncher *launcher, const CorralVmPoolState *state)
{
        g_autoptr (CorralVmPool) pool =
                corral_vm_pool_new (corral_vm_launcher_get_manager (launcher), NULL);
        g_autoptr (GAsyncResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) entries = NULL;
        guint n = 0;

        corral_vm_pool_list_async (pool, NULL, got_result, &res);
        entries = corral_vm_pool_list_finish (pool, wait_result (&res), &error);
        g_assert_no_error (error);
        for (guint i = 0; i < entries->len; i++)
                if (!state || ((CorralVmPoolEntry *) entries->pdata[i])->pool_state == *state)
                        n++;
        return n;
}

static gboolean
warm_vm_idle (gpointer launcher)
{
        static const CorralVmPoolState idle = CORRAL_VM_POOL_IDLE;

        ui_test_spin (500);
        return count_pool_vms (launcher, &idle) == 1;
}

static void
on_released (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_assert_true (corral_launcher_release_finish (CORRAL_LAUNCHER (source), res, NULL));
        *(gboolean *) user_data = TRUE;
}

/* A new task's folder page: a workspace boots while the person chooses, and Start takes it. The
 * app closing removes one that was not taken. */
static void
start_warm (CorralVmLauncher *launcher, GSettings *settings, const char *folder)
{
        CorralWindow *window = open_window (CORRAL_LAUNCHER (launcher), settings);
        void *session_page[] = { window, (void *) "session" };
        static const CorralVmPoolState idle = CORRAL_VM_POOL_IDLE;
        g_autofree char *pool_vm = NULL;
        g_autofree char *taken = NULL;
        CorralFirstRun *fr = corral_window_get_first_run (window);
        gboolean released = FALSE;
        gint64 clicked;

        corral_window_new_task (window);
        g_assert_true (ui_test_wait (warm_vm_idle, launcher, 300 * 1000));
        corral_first_run_set_folder (fr, folder);
        corral_first_run_set_mode (fr, FS_MODE_RO);
        clicked = g_get_monotonic_time ();
        g_signal_emit_by_name (
                ui_test_find (GTK_WIDGET (window), GTK_ACCESSIBLE_ROLE_BUTTON, "Start"), "clicked");
        if (!ui_test_wait (page_is, session_page, 120 * 1000))
                g_error ("the warm workspace did not start (page %s)",
                         corral_window_get_page (window));
        g_test_message ("Start to the chat, with a workspace made ready ahead: %.2f s",
                        (double) (g_get_monotonic_time () - clicked) / G_USEC_PER_SEC);
        pool_vm = assert_warm (launcher, corral_session_view_get_vm_name (
                                                 corral_window_get_session_view (window)));
        g_assert_cmpuint (count_pool_vms (launcher, &idle), ==, 0);

        /* Another new task: one boots again; the app closes before it is taken. */
        corral_window_new_task (window);
        g_assert_true (ui_test_wait (warm_vm_idle, launcher, 300 * 1000));
        corral_launcher_release_async (CORRAL_LAUNCHER (launcher), on_released, &released);
        while (!released)
                g_main_context_iteration (NULL, TRUE);
        g_assert_cmpuint (count_pool_vms (launcher, &idle), ==, 0);
        taken = g_strdup (
                corral_session_view_get_vm_name (corral_window_get_session_view (window)));
        gtk_window_destroy (GTK_WINDOW (window));
        ui_test_spin (100);
        remove_vm (launcher, taken);
        g_assert_cmpuint (count_pool_vms (launcher, NULL), ==, 0);
}

static gboolean
start_failed (gpointer window)
{
        return corral_starting_page_get_failed (corral_window_get_starting_page (window));
}

/* Damages the managed policy (before the window opens: nothing is made ready ahead for a
 * start that cannot happen). Returns the policy in force before, to restore. */
static char *
damage_policy (const char *dir)
{
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));

        g_assert_true (g_file_set_contents (
                policy, "{\"sharedFolders\": {\"protectedPaths\": [\"../..\"]}}", -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        return saved;
}

/* A damaged managed policy: the start fails at once, before an image is built or libvirt is
 * opened (nor was anything made ready ahead), and the page says which file and who can fix it;
 * once IT has fixed the file, Try Again starts the task. */
static void
start_with_damaged_policy (CorralWindow *window,
                           CorralVmLauncher *launcher,
                           const char *dir,
                           const char *saved)
{
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        GtkWidget *win = GTK_WIDGET (window);
        const char *description;
        GtkWidget *page;

        g_signal_emit_by_name (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Start"), "clicked");
        g_assert_true (ui_test_wait (start_failed, window, 30 * 1000));
        g_assert_null (corral_vm_launcher_get_manager (launcher)); /* libvirt never opened */
        page = ui_test_find (win, GTK_ACCESSIBLE_ROLE_GROUP,
                             "Your Organisation’s Policy Needs Fixing");
        g_assert_nonnull (page);
        description = adw_status_page_get_description (ADW_STATUS_PAGE (page));
        g_assert_nonnull (strstr (description, policy));
        g_assert_nonnull (strstr (description, "IT department"));
        ui_test_spin (500); /* the page's cross-fade */
        ui_test_screenshot (win, "29-vm-policy-damaged");
        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        g_signal_emit_by_name (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Try Again"),
                               "clicked");
}

static void
test_real_session (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmServer) fake = corral_fake_llm_server_new (0, &error);
        g_autoptr (GSettingsBackend) backend = g_memory_settings_backend_new ();
        g_autoptr (GSettings) settings = NULL;
        g_autoptr (CorralVmLauncher) launcher = corral_vm_launcher_new ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-ui-vm-XXXXXX", NULL);
        g_autofree char *folder = g_build_filename (tmp, "Documents", NULL);
        g_autofree char *old = g_build_filename (folder, "report-old.docx", NULL);
        g_autofree char *hello = g_build_filename (folder, "hello.txt", NULL);
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmp);
        g_autofree char *reply = NULL;
        g_autofree char *vm_name = NULL;
        g_autofree char *request = NULL;
        g_autofree char *saved_policy = NULL;
        g_autoptr (GPtrArray) shares = NULL;
        guint n_requests;
        void *paused_args[2];
        CorralWindow *window;
        CorralFirstRun *fr;
        CorralChatView *chat;
        GtkWidget *dialog;
        void *session_page[2];

        g_assert_no_error (error);
        use_fake_model (fake);
        g_assert_cmpint (g_mkdir (folder, 0700), ==, 0);
        g_assert_true (g_file_set_contents (old, "old", -1, NULL));
        /* The model's script: create, rm (refused), ask to delete, ask for a host, done. */
        push_tool (fake, "t1", "create",
                   "{\"path\": \"/workspace/Documents/hello.txt\", \"file_text\": \"hi\\n\"}");
        push_tool (fake, "t2", "shell",
                   "{\"command\": \"rm /workspace/Documents/report-old.docx\"}");
        push_tool (fake, "t3", "request_approval",
                   "{\"action\": \"delete\", \"path\": \"/workspace/Documents/report-old.docx\", "
                   "\"reason\": \"it is an older copy\"}");
        push_tool (fake, "t4", "request_approval",
                   "{\"action\": \"network\", \"host\": \"pypi.org\", \"reason\": \"to install "
                   "a package\"}");
        corral_fake_llm_server_push (
                fake, corral_fake_llm_anthropic_reply ("Done.", NULL, NULL, NULL, "end_turn"));

        settings = g_settings_new_with_backend ("org.corral.Corral", backend);
        g_settings_set_string (settings, "image", "minimal");
        g_settings_set_uint (settings, "memory-mib", 512);
        saved_policy = damage_policy (tmp);
        window = open_window (CORRAL_LAUNCHER (launcher), settings);

        fr = corral_window_get_first_run (window);
        corral_first_run_show_step (fr, "folder");
        corral_first_run_set_folder (fr, folder);
        corral_first_run_set_mode (fr, FS_MODE_RW_NODELETE);
        start_with_damaged_policy (window, launcher, tmp, saved_policy);
        session_page[0] = window;
        session_page[1] = (void *) "session";
        if (!ui_test_wait (page_is, session_page, 600 * 1000))
                g_error ("the workspace did not start (page %s)", corral_window_get_page (window));
        chat = corral_session_view_get_chat (corral_window_get_session_view (window));
        g_assert_true (ui_test_wait (has_source, chat, 60 * 1000));
        ui_test_spin (300);
        ui_test_screenshot (GTK_WIDGET (window), "30-vm-session");
        /* Not made ready ahead (the policy was damaged): booted as a warm one for this start. */
        g_free (assert_warm (launcher, corral_session_view_get_vm_name (
                                               corral_window_get_session_view (window))));

        corral_chat_view_send (chat, "Tidy up this folder");
        g_assert_true (ui_test_wait (has_dialog, chat, 120 * 1000));
        /* The created file reached the host; the refused rm deleted nothing, nor does the
         * question while it is open. */
        g_assert_true (ui_test_wait (file_exists, hello, 10 * 1000));
        g_assert_true (g_file_test (old, G_FILE_TEST_EXISTS));
        dialog = corral_chat_view_get_approval_dialog (chat);
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_BUTTON, "Allow Once"));
        /* The question names the file as the VM's file server found it (SECURITY.md L5). */
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "report-old.docx"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Documents"));
        g_assert_nonnull (
                ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Can edit, but not delete"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, old));
        ui_test_spin (1000);
        g_assert_true (g_file_test (old, G_FILE_TEST_EXISTS));
        ui_test_screenshot (GTK_WIDGET (window), "31-vm-approval");
        answer (chat, "allow");

        g_assert_true (ui_test_wait (has_dialog, chat, 120 * 1000));
        g_assert_false (g_file_test (old, G_FILE_TEST_EXISTS));
        dialog = corral_chat_view_get_approval_dialog (chat);
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Allow pypi.org?"));
        answer (chat, "deny");
        g_assert_true (ui_test_wait (not_busy, chat, 120 * 1000));
        g_assert_cmpuint (corral_chat_view_get_n_tool_cards (chat), ==, 4);
        reply = g_strdup (corral_chat_view_get_last_reply (chat));
        g_assert_cmpstr (g_strstrip (reply), ==, "Done.");
        ui_test_screenshot (GTK_WIDGET (window), "32-vm-done");
        vm_name = g_strdup (
                corral_session_view_get_vm_name (corral_window_get_session_view (window)));

        /* Closing asks, then pauses the workspace; the app opens again and resumes it. */
        gtk_window_close (GTK_WINDOW (window));
        g_assert_true (ui_test_wait (dialog_shown, window, 5000));
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (corral_window_get_close_dialog (window)),
                                     "pause");
        paused_args[0] = launcher;
        paused_args[1] = vm_name;
        g_assert_true (ui_test_wait (vm_paused, paused_args, 30 * 1000));
        window = reopen (CORRAL_LAUNCHER (launcher), settings, "Paused");
        g_assert_cmpint (vm_state (launcher, vm_name), ==, CORRAL_VM_STATE_RUNNING);
        ui_test_screenshot (GTK_WIDGET (window), "33-vm-reopened");
        gtk_window_destroy (GTK_WINDOW (window));
        ui_test_spin (100);

        /* The workspace is removed behind the app's back: the task is still listed, and
         * opening it makes a new workspace with the same folder, shared the same way. */
        remove_vm (launcher, vm_name);
        push_tool (fake, "t5", "shell", "{\"command\": \"cat /workspace/Documents/hello.txt\"}");
        corral_fake_llm_server_push (fake, corral_fake_llm_anthropic_reply (
                                                   "Still there.", NULL, NULL, NULL, "end_turn"));
        window = reopen (CORRAL_LAUNCHER (launcher), settings, "Workspace removed");
        g_assert_cmpstr (corral_session_view_get_vm_name (corral_window_get_session_view (window)),
                         ==, vm_name);
        shares = corral_shares_list (
                corral_session_view_get_vm_dir (corral_window_get_session_view (window)), NULL);
        g_assert_nonnull (shares);
        g_assert_cmpuint (shares->len, ==, 1);
        g_assert_cmpstr (((CorralShare *) shares->pdata[0])->path, ==, folder);
        g_assert_cmpint (((CorralShare *) shares->pdata[0])->mode, ==, FS_MODE_RW_NODELETE);
        chat = corral_session_view_get_chat (corral_window_get_session_view (window));
        n_requests = corral_fake_llm_server_get_n_requests (fake);
        corral_chat_view_send (chat, "Is hello.txt still there?");
        g_assert_true (ui_test_wait (not_busy, chat, 120 * 1000));
        g_clear_pointer (&reply, g_free);
        reply = g_strdup (corral_chat_view_get_last_reply (chat));
        g_assert_cmpstr (g_strstrip (reply), ==, "Still there.");
        /* The model saw the whole conversation, and the new workspace's file. */
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (fake), ==, n_requests + 2);
        request =
                cJSON_PrintUnformatted (corral_fake_llm_server_get_request (fake, n_requests + 1));
        g_assert_nonnull (strstr (request, "Tidy up this folder"));
        g_assert_nonnull (strstr (request, "hi\\n"));
        ui_test_screenshot (GTK_WIDGET (window), "34-vm-recreated");

        gtk_window_destroy (GTK_WINDOW (window));
        ui_test_spin (100);
        /* Through the app's connection: main()'s corralctl clean-up cannot open the embedded
         * driver while this process holds it, and a VM left running slows every later suite. */
        remove_vm (launcher, vm_name);

        start_warm (launcher, settings, folder);
        g_assert_cmpint (system (cmd), ==, 0);
}

/* corralctl ARGS… with this process's environment; its stdout (stripped), or NULL when it
 * failed (its stderr then in *err). */
static char *
ctl (char **err, ...)
{
        g_autoptr (GPtrArray) argv = g_ptr_array_new ();
        g_autofree char *path =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "app", "corralctl", NULL);
        g_autofree char *out = NULL, *stderr_text = NULL;
        g_autoptr (GError) error = NULL;
        const char *arg;
        int status = 0;
        va_list ap;

        g_ptr_array_add (argv, path);
        va_start (ap, err);
        while ((arg = va_arg (ap, const char *)))
                g_ptr_array_add (argv, (gpointer) arg);
        va_end (ap);
        g_ptr_array_add (argv, NULL);
        g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, 0, NULL, NULL, &out,
                                     &stderr_text, &status, &error));
        g_test_message ("corralctl %s: %s", (char *) argv->pdata[1], stderr_text);
        if (err)
                *err = g_strdup (stderr_text);
        if (!g_spawn_check_wait_status (status, NULL))
                return NULL;
        return g_strdup (g_strstrip (out));
}

static void sh (const char *fmt, ...) G_GNUC_PRINTF (1, 2);

static void
sh (const char *fmt, ...)
{
        g_autofree char *cmd = NULL;
        va_list ap;

        va_start (ap, fmt);
        cmd = g_strdup_vprintf (fmt, ap);
        va_end (ap);
        g_assert_cmpint (system (cmd), ==, 0);
}

/* The text of the first visible label under root that contains needle. */
static const char *
label_containing (GtkWidget *root, const char *needle)
{
        if (!gtk_widget_get_visible (root) || !gtk_widget_get_child_visible (root))
                return NULL;
        if (GTK_IS_LABEL (root) && strstr (gtk_label_get_text (GTK_LABEL (root)), needle))
                return gtk_label_get_text (GTK_LABEL (root));
        for (GtkWidget *c = gtk_widget_get_first_child (root); c;
             c = gtk_widget_get_next_sibling (c)) {
                const char *found = label_containing (c, needle);
                if (found)
                        return found;
        }
        return NULL;
}

static gboolean
start_failed_with (gpointer data)
{
        void **args = data;

        return corral_starting_page_get_failed (corral_window_get_starting_page (args[0])) &&
               ui_test_find (args[0], GTK_ACCESSIBLE_ROLE_GROUP, args[1]) != NULL;
}

/* IT's whole path (README, "For IT departments"): an image built from a recipe (the standard
 * image plus a Debian package, a file and a CA certificate), signed, exported; on the
 * workstation a policy that requires it and trusts only that key; imported; a task started in
 * the app runs in it. A copy changed after signing is refused, by import and by the app. */
static void
test_organisation_image (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmServer) fake = corral_fake_llm_server_new (0, &error);
        g_autoptr (GSettingsBackend) backend = g_memory_settings_backend_new ();
        g_autoptr (GSettings) settings = NULL;
        g_autoptr (CorralVmLauncher) launcher = corral_vm_launcher_new ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-org-image-XXXXXX", NULL);
        g_autofree char *folder = g_build_filename (tmp, "Projects", NULL);
        g_autofree char *recipe = g_build_filename (tmp, "acme.json", NULL);
        g_autofree char *key = g_build_filename (tmp, "signing-key.pem", NULL);
        g_autofree char *tar = g_build_filename (tmp, "acme-test.tar", NULL);
        g_autofree char *bad_tar = g_build_filename (tmp, "acme-test-changed.tar", NULL);
        g_autofree char *policy = g_build_filename (tmp, "managed.json", NULL);
        g_autofree char *workstation = g_build_filename (tmp, "workstation-cache", NULL);
        g_autofree char *saved_policy = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autofree char *saved_cache = g_strdup (g_getenv ("XDG_CACHE_HOME"));
        g_autofree char *pub = NULL, *out = NULL, *err = NULL, *text = NULL;
        g_autofree char *request = NULL, *vm_name = NULL, *imported = NULL;
        void *session_page[2], *refused[2];
        const char *text_in;
        CorralWindow *window;
        CorralFirstRun *fr;
        CorralChatView *chat;
        guint n_requests;

        g_assert_no_error (error);
        if (!g_find_program_in_path ("mmdebstrap") || !g_find_program_in_path ("openssl") ||
            getuid () != 0) {
                g_test_skip ("building an image needs root, mmdebstrap and openssl");
                return;
        }
        g_assert_cmpint (g_mkdir (folder, 0700), ==, 0);
        /* The recipe: a package, a file, the organisation's CA (so its hosts verify). */
        sh ("cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem "
            "-days 2 -subj '/CN=Corral Test Organisation CA' 2>/dev/null",
            tmp);
        g_assert_true (g_file_set_contents (
                recipe,
                "{\"name\": \"acme-test\", \"description\": \"ACME's workstation image\",\n"
                " \"packages\": [\"jq\"],\n"
                " \"files\": [{\"path\": \"/etc/acme/hello.txt\", \"mode\": \"0644\",\n"
                "             \"content\": \"hello from acme\\n\"}],\n"
                " \"ca_certificates\": [\"ca.pem\"]}\n",
                -1, NULL));
        out = ctl (&err, "image", "build", "--recipe", recipe, NULL);
        g_assert_nonnull (out);
        g_clear_pointer (&out, g_free);
        g_clear_pointer (&err, g_free);
        pub = ctl (NULL, "image", "keygen", key, NULL);
        g_assert_nonnull (pub);
        g_assert_nonnull (out = ctl (NULL, "image", "sign", "acme-test", "--key", key, NULL));
        g_clear_pointer (&out, g_free);
        g_assert_nonnull (out = ctl (NULL, "image", "export", "acme-test", tar, NULL));
        g_clear_pointer (&out, g_free);
        /* A copy changed after it was signed: one package version in its manifest. */
        sh ("cd '%s' && mkdir changed && tar -xf '%s' -C changed && "
            "sed -i 's/\"jq\": \"/\"jq\": \"9:/' changed/manifest.json && "
            "grep -q '\"jq\": \"9:' changed/manifest.json && "
            "cd changed && tar -cf '%s' ./*",
            tmp, tar, bad_tar);

        /* The workstation: the organisation's policy, an empty image store. */
        text = g_strdup_printf ("{\"images\": {\"required\": \"acme-test\", "
                                "\"requireSigned\": true, \"trustedKeys\": [\"%s\"]}}",
                                pub);
        g_assert_true (g_file_set_contents (policy, text, -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        g_setenv ("XDG_CACHE_HOME", workstation, TRUE);
        g_assert_null (ctl (&err, "image", "import", bad_tar, NULL));
        g_assert_nonnull (strstr (err, "acme-test"));
        g_assert_nonnull (strstr (err, "changed after it was signed"));
        g_clear_pointer (&err, g_free);
        g_assert_nonnull (out = ctl (NULL, "image", "import", tar, NULL));
        g_clear_pointer (&out, g_free);

        /* A task in the app: Preferences say minimal, the organisation requires its image. */
        use_fake_model (fake);
        push_tool (fake, "o1", "shell",
                   "{\"command\": \"cat /etc/acme/hello.txt; jq --version; "
                   "cat /etc/corral/image; ls /etc/ssl/certs/corral-extra-0.pem\"}");
        corral_fake_llm_server_push (
                fake,
                corral_fake_llm_anthropic_reply ("In ACME's image.", NULL, NULL, NULL, "end_turn"));
        settings = g_settings_new_with_backend ("org.corral.Corral", backend);
        g_settings_set_string (settings, "image", "minimal");
        g_settings_set_uint (settings, "memory-mib", 768);
        window = open_window (CORRAL_LAUNCHER (launcher), settings);
        fr = corral_window_get_first_run (window);
        corral_first_run_show_step (fr, "folder");
        corral_first_run_set_folder (fr, folder);
        corral_first_run_set_mode (fr, FS_MODE_RO);
        g_signal_emit_by_name (
                ui_test_find (GTK_WIDGET (window), GTK_ACCESSIBLE_ROLE_BUTTON, "Start"), "clicked");
        session_page[0] = window;
        session_page[1] = (void *) "session";
        if (!ui_test_wait (page_is, session_page, 600 * 1000))
                g_error ("the organisation's image did not start (page %s)",
                         corral_window_get_page (window));
        chat = corral_session_view_get_chat (corral_window_get_session_view (window));
        g_assert_true (ui_test_wait (has_source, chat, 60 * 1000));
        n_requests = corral_fake_llm_server_get_n_requests (fake);
        corral_chat_view_send (chat, "Which image is this?");
        g_assert_true (ui_test_wait (not_busy, chat, 180 * 1000));
        g_assert_cmpuint (corral_fake_llm_server_get_n_requests (fake), ==, n_requests + 2);
        request =
                cJSON_PrintUnformatted (corral_fake_llm_server_get_request (fake, n_requests + 1));
        g_assert_nonnull (strstr (request, "hello from acme"));
        g_assert_nonnull (strstr (request, "jq-1."));
        g_assert_nonnull (strstr (request, "acme-test "));
        g_assert_nonnull (strstr (request, "/etc/ssl/certs/corral-extra-0.pem"));
        ui_test_screenshot (GTK_WIDGET (window), "35-vm-organisation-image");
        vm_name = g_strdup (
                corral_session_view_get_vm_name (corral_window_get_session_view (window)));
        gtk_window_destroy (GTK_WINDOW (window));
        ui_test_spin (100);
        remove_vm (launcher, vm_name);

        /* The imported image changed in place after it was signed: refused by name, before
         * anything boots. */
        imported = ctl (NULL, "image", "verify", "acme-test", NULL);
        g_assert_nonnull (imported);
        sh ("sed -i 's/\"jq\": \"/\"jq\": \"9:/' '%s/manifest.json'", imported);
        window = open_window (CORRAL_LAUNCHER (launcher), settings);
        fr = corral_window_get_first_run (window);
        corral_window_new_task (window);
        corral_first_run_set_folder (fr, folder);
        corral_first_run_set_mode (fr, FS_MODE_RO);
        g_signal_emit_by_name (
                ui_test_find (GTK_WIDGET (window), GTK_ACCESSIBLE_ROLE_BUTTON, "Start"), "clicked");
        refused[0] = window;
        refused[1] = (void *) "Your Organisation Does Not Trust This Image";
        g_assert_true (ui_test_wait (start_failed_with, refused, 60 * 1000));
        gtk_expander_set_expanded (
                GTK_EXPANDER (ui_test_find_type (GTK_WIDGET (window), GTK_TYPE_EXPANDER)), TRUE);
        ui_test_spin (200);
        text_in = label_containing (GTK_WIDGET (window), "changed after it was signed");
        g_assert_nonnull (text_in);
        g_assert_nonnull (strstr (text_in, "acme-test"));
        ui_test_spin (500);
        ui_test_screenshot (GTK_WIDGET (window), "36-vm-organisation-image-changed");
        gtk_window_destroy (GTK_WINDOW (window));
        ui_test_spin (100);

        g_setenv ("CORRAL_MANAGED_POLICY", saved_policy ? saved_policy : "", TRUE);
        if (saved_cache)
                g_setenv ("XDG_CACHE_HOME", saved_cache, TRUE);
        else
                g_unsetenv ("XDG_CACHE_HOME");
        sh ("rm -rf '%s'", tmp);
}

/* How many distinct colours the picture has (up to 64: enough to tell a desktop from a blank
 * screen). */
static guint
colours_of (GdkPixbuf *pixbuf)
{
        g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);
        const guint8 *px = gdk_pixbuf_read_pixels (pixbuf);
        int stride = gdk_pixbuf_get_rowstride (pixbuf);
        int n = gdk_pixbuf_get_n_channels (pixbuf);

        for (int y = 0; y < gdk_pixbuf_get_height (pixbuf); y += 2)
                for (int x = 0; x < gdk_pixbuf_get_width (pixbuf); x += 2) {
                        const guint8 *p = px + y * stride + x * n;
                        guint rgb = (guint) p[0] << 16 | (guint) p[1] << 8 | p[2];

                        g_hash_table_add (seen, GUINT_TO_POINTER (rgb + 1));
                        if (g_hash_table_size (seen) >= 64)
                                return 64;
                }
        return g_hash_table_size (seen);
}

static gboolean
computer_use_on (gpointer fr)
{
        return corral_first_run_get_computer_use (fr);
}

static gboolean
screen_connected (gpointer panel)
{
        CorralComputer *computer = corral_screen_panel_get_computer (panel);
        CorralScreenScale scale = { 0 };

        if (computer)
                corral_computer_get_scale (computer, &scale);
        return scale.screen_width > 0;
}

/* Computer use end to end in the app: the person turns on "Let the Assistant Use a Screen",
 * the task runs in the desktop image, and the scripted model starts a test program with one
 * big button (through its shell) and clicks it with the computer tool: the program writes into
 * the shared folder, which the host sees. The Screen page then shows the desktop, the same
 * picture the assistant's screenshot has. */
static void
test_computer_use (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmServer) fake = corral_fake_llm_server_new (0, &error);
        g_autoptr (GSettingsBackend) backend = g_memory_settings_backend_new ();
        g_autoptr (GSettings) settings = NULL;
        g_autoptr (CorralVmLauncher) launcher = corral_vm_launcher_new ();
        g_autofree char *tmp = g_dir_make_tmp ("corral-ui-vm-XXXXXX", NULL);
        g_autofree char *folder = g_build_filename (tmp, "Projects", NULL);
        g_autofree char *clicked = g_build_filename (folder, "clicked", NULL);
        g_autofree char *contents = NULL;
        g_autofree char *vm_name = NULL;
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", tmp);
        g_autoptr (CorralComputerResult) shot = NULL;
        g_autoptr (GdkPixbufLoader) loader = gdk_pixbuf_loader_new ();
        g_autoptr (GdkTexture) view = NULL;
        GAsyncResult *res = NULL;
        CorralSessionView *session;
        CorralScreenPanel *screen;
        CorralComputer *computer;
        CorralWindow *window;
        CorralFirstRun *fr;
        CorralChatView *chat;
        void *session_page[2];
        guint colours;
        double distance;
        cJSON *input;

        g_assert_no_error (error);
        use_fake_model (fake);
        g_assert_cmpint (g_mkdir (folder, 0700), ==, 0);
        /* The model's script: start the button program on the screen (and wait for its
         * window), click the button (at 100,100, 400 × 300), done. */
        push_tool (fake, "c1", "shell",
                   "{\"command\": \"export DISPLAY=:0; setsid corral-test-button "
                   "/workspace/Projects/clicked </dev/null >/dev/null 2>&1 & "
                   "for i in $(seq 120); do xwininfo -name corral-test-button >/dev/null "
                   "2>&1 && break; sleep 0.5; done; sleep 1\"}");
        push_tool (fake, "c2", "computer",
                   "{\"action\": \"left_click\", \"coordinate\": [300, 250]}");
        corral_fake_llm_server_push (
                fake, corral_fake_llm_anthropic_reply ("Clicked.", NULL, NULL, NULL, "end_turn"));

        settings = g_settings_new_with_backend ("org.corral.Corral", backend);
        window = open_window (CORRAL_LAUNCHER (launcher), settings);
        fr = corral_window_get_first_run (window);
        corral_first_run_show_step (fr, "folder");
        corral_first_run_set_folder (fr, folder);
        corral_first_run_set_mode (fr, FS_MODE_RW);
        corral_first_run_set_computer_use (fr, TRUE);
        g_assert_true (ui_test_wait (computer_use_on, fr, 10 * 1000));
        g_signal_emit_by_name (
                ui_test_find (GTK_WIDGET (window), GTK_ACCESSIBLE_ROLE_BUTTON, "Start"), "clicked");
        session_page[0] = window;
        session_page[1] = (void *) "session";
        /* The desktop image may be built first. */
        if (!ui_test_wait (page_is, session_page, 1200 * 1000))
                g_error ("the workspace did not start (page %s)", corral_window_get_page (window));
        session = corral_window_get_session_view (window);
        chat = corral_session_view_get_chat (session);
        g_assert_true (ui_test_wait (has_source, chat, 60 * 1000));
        vm_name = g_strdup (corral_session_view_get_vm_name (session));
        screen = CORRAL_SCREEN_PANEL (corral_session_view_get_screen (session));
        computer = corral_screen_panel_get_computer (screen);
        g_assert_nonnull (computer);

        corral_chat_view_send (chat, "Click the button on the screen");
        g_assert_true (ui_test_wait (not_busy, chat, 300 * 1000));
        g_assert_true (ui_test_wait (file_exists, clicked, 10 * 1000));
        g_assert_true (g_file_get_contents (clicked, &contents, NULL, NULL));
        g_assert_cmpstr (g_strstrip (contents), ==, "clicked");
        g_assert_cmpuint (corral_chat_view_get_n_tool_cards (chat), ==, 2);

        /* The Screen page shows the desktop: what the assistant's screenshot shows. */
        corral_session_view_show_panel (session, "screen");
        g_assert_true (ui_test_wait (screen_connected, screen, 30 * 1000));
        input = cJSON_Parse ("{\"action\": \"screenshot\"}");
        corral_computer_run_async (computer, input, NULL, got_result, &res);
        cJSON_Delete (input);
        shot = corral_computer_run_finish (computer, wait_result (&res), &error);
        g_clear_object (&res);
        g_assert_no_error (error);
        g_assert_true (gdk_pixbuf_loader_write_bytes (loader, shot->image, &error));
        g_assert_true (gdk_pixbuf_loader_close (loader, &error));
        colours = colours_of (gdk_pixbuf_loader_get_pixbuf (loader));
        g_test_message ("the assistant's screenshot has %u colours", colours);
        g_assert_cmpuint (colours, >=, 16);
        ui_test_spin (500);
        view = ui_test_render (ui_test_find_type (GTK_WIDGET (screen), GTK_TYPE_PICTURE));
        distance = ui_test_view_distance (view, gdk_pixbuf_loader_get_pixbuf (loader), 1280, 800);
        g_test_message ("the Screen page against the screenshot: %.1f", distance);
        ui_test_screenshot (GTK_WIDGET (window), "37-vm-computer-use");
        g_assert_cmpfloat (distance, <, 24);

        gtk_window_destroy (GTK_WINDOW (window));
        ui_test_spin (100);
        remove_vm (launcher, vm_name);
        g_assert_cmpint (system (cmd), ==, 0);
}

static gboolean
ignore_no_wm_warnings (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
        return !(g_strcmp0 (domain, "Gtk") == 0 && strstr (message, "did not receive a focus-out"));
}

int
main (int argc, char **argv)
{
        int r;

        if (g_getenv ("CORRAL_VALGRIND")) {
                g_print ("1..0 # SKIP a VM and GTK under valgrind take too long\n");
                return 0;
        }
        if (!g_find_program_in_path ("qemu-system-x86_64")) {
                if (g_strcmp0 (g_getenv ("CORRAL_REQUIRE_VM"), "1") == 0) {
                        g_printerr ("VMs are required here, and QEMU is missing\n");
                        return 1;
                }
                g_print ("1..0 # SKIP qemu-system-x86_64 is not installed\n");
                return 0;
        }
        /* The app's own keychain and VM state, never the person's. */
        if (!egress_test_keyring_dir ())
                return egress_test_keyring_reexec (argv);
        g_setenv ("XDG_STATE_HOME", STATE_DIR, TRUE);
        if ((r = ui_test_setup_display ()) != 0)
                return r == 77 ? 0 : r;
        gtk_test_init (&argc, &argv, NULL);
        g_test_log_set_fatal_handler (ignore_no_wm_warnings, NULL);
        adw_init ();
        g_assert_nonnull (corral_get_resource ());
        {
                g_autoptr (GtkCssProvider) css = gtk_css_provider_new ();
                gtk_css_provider_load_from_resource (css, "/org/corral/Corral/style.css");
                gtk_style_context_add_provider_for_display (
                        gdk_display_get_default (), GTK_STYLE_PROVIDER (css),
                        GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
        }
        cleanup_vms ();
        g_test_add_func ("/ui-vm/real-session", test_real_session);
        g_test_add_func ("/ui-vm/organisation-image", test_organisation_image);
        g_test_add_func ("/ui-vm/computer-use", test_computer_use);
        r = g_test_run ();
        cleanup_vms ();
        ui_test_teardown_display ();
        return r;
}
