/* test-ui.c — the desktop app's real widgets in a real window (suite "ui").
 *
 * Only the VM part is scripted (TestLauncher below): VM tests run separately. Everything else is
 * real: the keychain (a private gnome-keyring), the shares list (corral-shares on a temporary VM
 * folder, offline), GSettings, libadwaita's styles. Each main screen is saved as a PNG under
 * BUILD/tests/ui/screenshots/ and checked to be a real render.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#define G_SETTINGS_ENABLE_BACKEND
#include <gio/gsettingsbackend.h>
#include <glib/gstdio.h>
#include <string.h>

#include "corral-assistant-source.h"
#include "corral-application.h"
#include "corral-demo-source.h"
#include "corral-resources.h"
#include "corral-preferences.h"
#include "corral-secret-store.h"
#include "corral-shares.h"
#include "corral-task-record.h"
#include "corral-task-start.h"
#include "corral-tool-card.h"
#include "corral-ui-util.h"
#include "corral-vm-manager.h"
#include "corral-window.h"
#include "egress-policy.h"
#include "egress-test.h"
#include "fs-server.h"
#include "test-launcher.h"
#include "fake-llm-server.h"
#include "ui-test-util.h"

/* Fixture ------------------------------------------------------------------------------------- */

typedef struct {
        char *tmp;
        char *folder;
        char *vm_dir;
        GSettings *settings;
        TestLauncher *launcher;
        CorralWindow *window;
        gboolean closed; /* the window destroyed itself; the test holds the last reference */
} Fixture;

static void
open_window (Fixture *f)
{
        f->window = corral_window_new (NULL, CORRAL_LAUNCHER (f->launcher), f->settings);
        gtk_window_set_default_size (GTK_WINDOW (f->window), 1100, 760);
        gtk_window_present (GTK_WINDOW (f->window));
        ui_test_spin (300);
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        g_autoptr (GSettingsBackend) backend = g_memory_settings_backend_new ();
        g_autofree char *file = NULL;

        f->tmp = g_dir_make_tmp ("corral-ui-XXXXXX", NULL);
        f->folder = g_build_filename (f->tmp, "Documents", NULL);
        f->vm_dir = g_build_filename (f->tmp, "vm", NULL);
        g_assert_cmpint (g_mkdir (f->folder, 0700), ==, 0);
        g_assert_cmpint (g_mkdir (f->vm_dir, 0700), ==, 0);
        file = g_build_filename (f->folder, "report-old.docx", NULL);
        g_assert_true (g_file_set_contents (file, "old", -1, NULL));
        f->settings = g_settings_new_with_backend ("org.corral.Corral", backend);
        f->launcher = g_object_new (TEST_TYPE_LAUNCHER, NULL);
        f->launcher->vm_dir = g_strdup (f->vm_dir);
        open_window (f);
}

static void
rm_rf (const char *path)
{
        g_autoptr (GDir) dir = g_dir_open (path, 0, NULL);
        const char *name;

        while (dir && (name = g_dir_read_name (dir))) {
                g_autofree char *child = g_build_filename (path, name, NULL);
                if (g_file_test (child, G_FILE_TEST_IS_DIR) &&
                    !g_file_test (child, G_FILE_TEST_IS_SYMLINK))
                        rm_rf (child);
                else
                        g_unlink (child);
        }
        g_rmdir (path);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        if (f->closed)
                g_object_unref (f->window);
        else
                gtk_window_destroy (GTK_WINDOW (f->window));
        ui_test_spin (50);
        g_clear_object (&f->launcher);
        g_clear_object (&f->settings);
        rm_rf (f->tmp);
        {
                /* Each test starts with no remembered tasks. */
                g_autofree char *records = corral_task_record_dir ();
                rm_rf (records);
        }
        g_free (f->tmp);
        g_free (f->folder);
        g_free (f->vm_dir);
}

static gboolean
page_is (gpointer data)
{
        void **args = data;
        return g_strcmp0 (corral_window_get_page (args[0]), args[1]) == 0;
}

static void
wait_page (Fixture *f, const char *page)
{
        void *args[] = { f->window, (void *) page };
        g_assert_true (ui_test_wait (page_is, args, 5000));
}

static gboolean
step_is (gpointer data)
{
        void **args = data;
        return g_strcmp0 (corral_first_run_get_step (args[0]), args[1]) == 0;
}

static void
click (GtkWidget *root, const char *name)
{
        GtkWidget *button = ui_test_find (root, GTK_ACCESSIBLE_ROLE_BUTTON, name);

        if (!button)
                g_error ("no visible button “%s”", name);
        g_assert_true (gtk_widget_is_sensitive (button));
        g_signal_emit_by_name (button, "clicked");
}

/* Go to a running session with the demo source. */
static CorralDemoSource *
start_session (Fixture *f)
{
        CorralFirstRun *fr = corral_window_get_first_run (f->window);
        CorralDemoSource *demo = corral_demo_source_new ();

        corral_first_run_show_step (fr, "folder");
        corral_first_run_set_folder (fr, f->folder);
        corral_first_run_set_mode (fr, FS_MODE_RW_NODELETE);
        click (GTK_WIDGET (f->window), "Start");
        wait_page (f, "starting");
        test_launcher_finish (f->launcher);
        wait_page (f, "session");
        corral_demo_source_set_step_delay (demo, 0);
        corral_demo_source_set_folder (demo, f->folder);
        corral_window_set_chat_source (f->window, CORRAL_CHAT_SOURCE (demo));
        ui_test_spin (300);
        return demo;
}

/* Words for the model or for developers, never shown to the person outside a card's Details. */
static const char *const jargon[] = {
        "request_approval", "(rule",     "exit status", "Exit status", "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",   "corralctl", "/workspace/", "str_replace", "[exit status"
};

static void
assert_plain_words (GtkWidget *w)
{
        if (!gtk_widget_get_visible (w) || !gtk_widget_get_child_visible (w))
                return;
        /* A card's Details hold the command, its output and the model's text: for whoever
         * opens them. */
        if (GTK_IS_EXPANDER (w) &&
            g_strcmp0 (gtk_expander_get_label (GTK_EXPANDER (w)), "Details") == 0)
                return;
        if (GTK_IS_LABEL (w)) {
                const char *text = gtk_label_get_text (GTK_LABEL (w));

                for (gsize i = 0; i < G_N_ELEMENTS (jargon); i++)
                        if (strstr (text, jargon[i]))
                                g_error ("“%s” is shown to the person: %s", jargon[i], text);
        }
        for (GtkWidget *c = gtk_widget_get_first_child (w); c; c = gtk_widget_get_next_sibling (c))
                assert_plain_words (c);
}

/* Tests ---------------------------------------------------------------------------------------- */

/* The window's keyboard focus is widget or inside it. */
static gboolean
focus_in (GtkWidget *win, GtkWidget *widget)
{
        GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (win));

        g_assert_nonnull (widget);
        return focus && (focus == widget || gtk_widget_is_ancestor (focus, widget));
}

static gboolean
key_refused_shown (gpointer win)
{
        return ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                             "The provider did not accept this key. Copy it again, whole, from "
                             "your provider’s website, and paste it here.") != NULL;
}

static void
test_first_run (Fixture *f, gconstpointer data)
{
        CorralFirstRun *fr = corral_window_get_first_run (f->window);
        GtkWidget *win = GTK_WIDGET (f->window);
        GtkWidget *key;
        void *step_args[] = { fr, (void *) "folder" };
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) secrets = NULL;
        g_autoptr (GPtrArray) shares = NULL;
        /* The provider the key is checked with: on loopback, accepting one key. */
        g_autoptr (CorralFakeLlmServer) fake = corral_fake_llm_server_new (0, &error);
        g_autofree char *url = NULL;

        g_assert_no_error (error);
        url = corral_fake_llm_server_get_url (fake);
        g_setenv ("ANTHROPIC_BASE_URL", url, TRUE);
        corral_fake_llm_server_set_valid_key (fake, "sk-ant-test-key-0123456789");
        CorralStartingPage *starting = corral_window_get_starting_page (f->window);

        g_assert_cmpstr (corral_window_get_page (f->window), ==, "first-run");
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "welcome");
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Get Started"));
        /* Each step starts with the keyboard on what comes next, not on the menu button. */
        g_assert_true (
                focus_in (win, ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Get Started")));
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "01-welcome");

        click (win, "Get Started");
        ui_test_spin (400);
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "provider");
        /* Back on every step of the first run. */
        click (win, "Back");
        ui_test_spin (400);
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "welcome");
        g_assert_null (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Back"));
        click (win, "Get Started");
        ui_test_spin (400);
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "provider");
        key = ui_test_find_type (win, ADW_TYPE_PASSWORD_ENTRY_ROW);
        g_assert_nonnull (key);
        g_assert_true (focus_in (win, key));
        /* An empty key is refused with a reason... */
        click (win, "Continue");
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "provider");
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                        "Enter the API key from your provider’s website."));
        /* ... which goes once another provider is chosen. */
        gtk_check_button_set_active (
                GTK_CHECK_BUTTON (ui_test_find (win, GTK_ACCESSIBLE_ROLE_CHECKBOX,
                                                "OpenAI or Compatible Server")),
                TRUE);
        g_assert_null (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                     "Enter the API key from your provider’s website."));
        gtk_check_button_set_active (
                GTK_CHECK_BUTTON (ui_test_find (win, GTK_ACCESSIBLE_ROLE_CHECKBOX, "Anthropic")),
                TRUE);
        /* A key the provider refuses is said here, checked with one request, and not kept. */
        gtk_editable_set_text (GTK_EDITABLE (key), "sk-ant-mistyped");
        click (win, "Continue");
        g_assert_true (ui_test_wait (key_refused_shown, win, 20000));
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "provider");
        g_assert_cmpuint (corral_fake_llm_server_get_n_key_checks (fake), ==, 1);
        secrets = corral_secret_store_list_sync (NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (secrets->len, ==, 0);
        g_clear_pointer (&secrets, g_ptr_array_unref);
        ui_test_screenshot (win, "02b-provider-key-refused");
        gtk_editable_set_text (GTK_EDITABLE (key), "sk-ant-test-key-0123456789");
        ui_test_screenshot (win, "02-provider");
        /* Enter in the key field (its text emits activate) continues, as the button does. */
        g_signal_emit_by_name (ui_test_find_type (key, GTK_TYPE_TEXT), "activate");
        g_assert_true (ui_test_wait (step_is, step_args, 20000));
        /* Into the keychain under "anthropic" with its host; the field is emptied. */
        g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (key)), ==, "");
        secrets = corral_secret_store_list_sync (NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (secrets->len, ==, 1);
        g_assert_cmpstr (((CorralSecretInfo *) secrets->pdata[0])->name, ==, "anthropic");
        g_assert_cmpstr (((CorralSecretInfo *) secrets->pdata[0])->hosts[0], ==,
                         "api.anthropic.com");
        g_assert_cmpuint (corral_fake_llm_server_get_n_key_checks (fake), ==, 2);
        g_unsetenv ("ANTHROPIC_BASE_URL");
        ui_test_spin (200); /* the checks' connections close before the server goes */

        ui_test_spin (400);
        g_assert_true (focus_in (
                win, ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Choose a folder to share")));
        /* The folder step leads back to the provider (the key is kept), and on again. */
        click (win, "Back");
        ui_test_spin (400);
        g_assert_cmpstr (corral_first_run_get_step (fr), ==, "provider");
        corral_first_run_show_step (fr, "folder");
        ui_test_spin (400);
        g_assert_false (
                gtk_widget_is_sensitive (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Start")));
        corral_first_run_set_folder (fr, f->folder);
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_CHECKBOX, "Can read"));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_CHECKBOX, "Can edit"));
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_CHECKBOX, "Can edit, but not delete"));
        corral_first_run_set_mode (fr, FS_MODE_RO);
        /* Computer use: offered, off until the person turns it on for this task. */
        {
                GtkWidget *screen = ui_test_find (win, GTK_ACCESSIBLE_ROLE_SWITCH,
                                                  "Let the assistant use a screen");

                g_assert_nonnull (screen);
                g_assert_false (gtk_switch_get_active (GTK_SWITCH (screen)));
                g_assert_false (corral_first_run_get_computer_use (fr));
                gtk_switch_set_active (GTK_SWITCH (screen), TRUE);
                g_assert_true (corral_first_run_get_computer_use (fr));
                gtk_switch_set_active (GTK_SWITCH (screen), FALSE);
        }
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "03-folder");
        /* The home folder or the whole computer may be shared, with a plain warning. */
        g_assert_null (corral_ui_folder_warning (f->folder));
        for (guint i = 0; i < 2; i++) {
                const char *broad = i ? "/" : g_get_home_dir ();
                const char *warning = corral_ui_folder_warning (broad);

                g_assert_nonnull (warning);
                g_assert_nonnull (strstr (warning, i ? "whole computer" : "whole home folder"));
                g_assert_nonnull (strstr (warning, "stay hidden"));
                corral_first_run_set_folder (fr, broad);
                g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, warning));
                g_assert_true (gtk_widget_is_sensitive (
                        ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Start")));
                if (!i) {
                        ui_test_spin (300);
                        ui_test_screenshot (win, "03b-folder-home");
                }
        }
        corral_first_run_set_folder (fr, f->folder);
        g_assert_null (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, corral_ui_folder_warning ("/")));
        click (win, "Start");

        wait_page (f, "starting");
        ui_test_spin (300);
        /* Only checked (a cached image): no word of a first time. */
        f->launcher->progress (CORRAL_LAUNCH_STAGE_IMAGE, -1.0, NULL, f->launcher->progress_data);
        ui_test_spin (100);
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, "Checking the workspace…"));
        g_assert_null (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                     "Building the workspace (only the first time)…"));
        /* Built: the builder's steps come with a fraction. */
        f->launcher->progress (CORRAL_LAUNCH_STAGE_IMAGE, 0.4, "Unpacking the kernel",
                               f->launcher->progress_data);
        ui_test_spin (300);
        g_assert_cmpint (corral_starting_page_get_stage (starting), ==, CORRAL_LAUNCH_STAGE_IMAGE);
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                        "Building the workspace (only the first time)…"));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_PROGRESS_BAR, "Progress"));
        ui_test_screenshot (win, "04-starting");

        test_launcher_finish (f->launcher);
        wait_page (f, "session");
        shares = corral_shares_list (f->vm_dir, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (shares->len, ==, 1);
        g_assert_cmpint (((CorralShare *) shares->pdata[0])->mode, ==, FS_MODE_RO);
        g_assert_true (g_settings_get_boolean (f->settings, "first-run-done"));
}

static void
test_start_error (Fixture *f, gconstpointer data)
{
        CorralStartingPage *starting = corral_window_get_starting_page (f->window);
        GtkWidget *win = GTK_WIDGET (f->window);

        f->launcher->fail = TRUE;
        corral_first_run_show_step (corral_window_get_first_run (f->window), "folder");
        corral_first_run_set_folder (corral_window_get_first_run (f->window), f->folder);
        click (win, "Start");
        wait_page (f, "starting");
        test_launcher_finish (f->launcher);
        ui_test_spin (300);
        g_assert_true (corral_starting_page_get_failed (starting));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Try Again"));
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "05-error");
        click (win, "Back");
        wait_page (f, "first-run");
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

static void
answer (CorralChatView *chat, const char *response)
{
        AdwMessageDialog *d = ADW_MESSAGE_DIALOG (corral_chat_view_get_approval_dialog (chat));

        adw_message_dialog_response (d, response);
        gtk_window_destroy (GTK_WINDOW (d));
        ui_test_spin (50);
}

static void
record_answer (CorralChatAnswer answer, gpointer user_data)
{
        *(int *) user_data = (int) answer;
}

/* Questions as the assistant loop sends them: a host on this computer carries a warning and no
 * suggested yes; the assistant's words and a file's name are shown as they are, escaped by the
 * loop (one line) and never read as markup (SECURITY.md L5). */
static void
test_approval_shown (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralChatView *chat =
                corral_session_view_get_chat (corral_window_get_session_view (f->window));
        g_autoptr (CorralChatApproval) net = NULL, del = NULL;
        CorralChatApprovalFile file = { .share_name = (char *) "Documents",
                                        .share_folder = f->folder,
                                        .mode = FS_MODE_RO,
                                        .path = (char *) "<b>old</b>\\n.txt",
                                        .type = G_FILE_TYPE_SYMBOLIC_LINK };
        GtkWidget *dialog;
        int got = -1;
        const char *reason = "check the API\\n  Allow? [y/N] y\\x1b[2K <i>now</i>";
        g_autofree char *said = g_strdup_printf ("The assistant says: “%s”", reason);

        net = corral_chat_approval_new (CORRAL_CHAT_APPROVAL_NETWORK, "127.0.0.1:2375", reason,
                                        record_answer, &got, NULL);
        corral_chat_approval_set_warning (net, "This is your own computer, not a website.");
        corral_chat_source_emit_approval_requested (CORRAL_CHAT_SOURCE (demo), net);
        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        dialog = corral_chat_view_get_approval_dialog (chat);
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL,
                                        "This is your own computer, not a website."));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_IMG, "Warning"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, said));
        g_assert_cmpint (
                adw_message_dialog_get_response_appearance (ADW_MESSAGE_DIALOG (dialog), "task"),
                ==, ADW_RESPONSE_DESTRUCTIVE);
        g_assert_cmpstr (adw_message_dialog_get_default_response (ADW_MESSAGE_DIALOG (dialog)), ==,
                         "deny");
        ui_test_spin (300);
        ui_test_screenshot (dialog, "09b-dialog-network-warning");
        answer (chat, "deny");
        g_assert_cmpint (got, ==, CORRAL_CHAT_ANSWER_DENY);

        del = corral_chat_approval_new (CORRAL_CHAT_APPROVAL_DELETE, "/workspace/Documents/x",
                                        reason, record_answer, &got, NULL);
        corral_chat_approval_set_file (del, &file);
        corral_chat_source_emit_approval_requested (CORRAL_CHAT_SOURCE (demo), del);
        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        dialog = corral_chat_view_get_approval_dialog (chat);
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Delete This Link?"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "<b>old</b>\\n.txt"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Can read"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, said));
        ui_test_spin (300);
        ui_test_screenshot (dialog, "09c-dialog-delete-link");
        answer (chat, "allow");
        g_assert_cmpint (got, ==, CORRAL_CHAT_ANSWER_ALLOW_ONCE);
}

static void
test_chat (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralSessionView *session = corral_window_get_session_view (f->window);
        CorralChatView *chat = corral_session_view_get_chat (session);
        GtkWidget *win = GTK_WIDGET (f->window);
        const GPtrArray *answers = corral_demo_source_get_answers (demo);
        GtkWidget *dialog;
        g_autofree char *old = g_build_filename (f->folder, "report-old.docx", NULL);

        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Send"));
        ui_test_screenshot (win, "06-session-empty");
        corral_chat_view_send (chat, "Tidy up the reports in this folder");
        g_assert_true (corral_chat_view_get_busy (chat));
        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        /* Streamed text and cards arrived; nothing is deleted while the question is open. */
        g_assert_true (g_str_has_prefix (corral_chat_view_get_last_reply (chat),
                                         "\n\nreport-old.docx is an older copy"));
        g_assert_cmpuint (corral_chat_view_get_n_tool_cards (chat), ==, 3);
        g_assert_cmpuint (corral_chat_view_count_tool_cards (chat, "running"), ==, 1);
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Stop"));
        ui_test_spin (500);
        g_assert_cmpuint (answers->len, ==, 0);
        g_assert_true (g_file_test (old, G_FILE_TEST_EXISTS));
        dialog = corral_chat_view_get_approval_dialog (chat);
        /* What the host will delete, exactly: the path in the shared folder, the folder and its
         * mode, the file on this computer (SECURITY.md L5). */
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Delete This File?"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "report-old.docx"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Documents"));
        g_assert_nonnull (
                ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Can edit, but not delete"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, old));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_BUTTON, "Allow Once"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_BUTTON, "Deny"));
        ui_test_screenshot (win, "07-chat-approval");
        ui_test_screenshot (dialog, "08-dialog-delete");
        answer (chat, "allow");
        g_assert_cmpuint (answers->len, ==, 1);
        g_assert_cmpstr (answers->pdata[0], ==, "delete:allow-once");

        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        dialog = corral_chat_view_get_approval_dialog (chat);
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_LABEL, "Allow pypi.org?"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_BUTTON, "For This Task"));
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_BUTTON, "Always"));
        ui_test_spin (300);
        ui_test_screenshot (dialog, "09-dialog-network");
        answer (chat, "deny");
        g_assert_cmpstr (answers->pdata[1], ==, "network:deny");
        g_assert_true (ui_test_wait (not_busy, chat, 5000));
        g_assert_cmpuint (corral_chat_view_get_n_tool_cards (chat), ==, 4);
        /* The Changes panel lists the change journal's changes (/ui/changes), not what tool
         * cards say: the demo source wrote none. */
        g_assert_cmpuint (
                corral_changes_panel_get_n_changes (corral_session_view_get_changes (session)), ==,
                0);
        ui_test_spin (300);
        ui_test_assert_buttons_named (win);
        assert_plain_words (win);
        ui_test_screenshot (win, "10-chat-done");
        corral_session_view_show_panel (session, "changes");
        ui_test_spin (400);
        ui_test_screenshot (win, "11-changes-none");
        corral_session_view_show_panel (session, "terminal");
        ui_test_spin (400);
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_GROUP, "Terminal Not Connected Yet")
                        ?: ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                         "Terminal Not Connected Yet"));
        ui_test_screenshot (win, "12-terminal");
}

/* The Changes panel ------------------------------------------------------------------------- */

static GBytes *
png_bytes (guint8 r, guint8 g, guint8 b)
{
        guint8 pixels[64 * 48 * 4];
        g_autoptr (GBytes) data = NULL;
        g_autoptr (GdkTexture) texture = NULL;

        for (gsize i = 0; i < sizeof pixels; i += 4) {
                pixels[i] = (i / 4) % 64 < 32 ? r : 255 - r;
                pixels[i + 1] = g;
                pixels[i + 2] = b;
                pixels[i + 3] = 255;
        }
        data = g_bytes_new (pixels, sizeof pixels);
        texture = gdk_memory_texture_new (64, 48, GDK_MEMORY_R8G8B8A8, data, 64 * 4);
        return gdk_texture_save_to_png_bytes (texture);
}

static void
put (const char *dir, const char *name, const void *data, gssize len)
{
        g_autofree char *path = g_build_filename (dir, name, NULL);
        g_autofree char *parent = g_path_get_dirname (path);

        g_assert_cmpint (g_mkdir_with_parents (parent, 0700), ==, 0);
        g_assert_true (g_file_set_contents (path, data, len, NULL));
}

static char *
get (const char *dir, const char *name)
{
        g_autofree char *path = g_build_filename (dir, name, NULL);
        char *text = NULL;

        if (!g_file_get_contents (path, &text, NULL, NULL))
                return NULL;
        return text;
}

static gboolean
changes_listed (gpointer data)
{
        void **args = data;

        return !corral_changes_panel_get_busy (args[0]) &&
               corral_changes_panel_get_n_changes (args[0]) == GPOINTER_TO_UINT (args[1]);
}

static gboolean
review_shown (gpointer data)
{
        CorralChangeWindow *w = corral_changes_panel_get_review (data);

        return w && g_strcmp0 (corral_change_window_get_shown (w), "loading") != 0;
}

static gboolean
changes_dialog (gpointer data)
{
        return corral_changes_panel_get_dialog (data) != NULL;
}

static gboolean
changes_dialog_shown (gpointer data)
{
        AdwMessageDialog *d = corral_changes_panel_get_dialog (data);

        return d && gtk_widget_get_mapped (GTK_WIDGET (d)) &&
               gtk_widget_get_width (GTK_WIDGET (d)) > 0;
}

static void
changes_answer (CorralChangesPanel *panel, const char *response)
{
        AdwMessageDialog *d = corral_changes_panel_get_dialog (panel);

        adw_message_dialog_response (d, response);
        gtk_window_destroy (GTK_WINDOW (d));
        ui_test_spin (50);
}

static guint
count_lines (const char *text)
{
        guint n = 0;

        for (const char *p = text; *p; p++)
                n += *p == '\n';
        return n;
}

/* A task's change journal as corral-fsd writes it (mounts/server/fs-journal.h; the server side
 * is tested by the mount suites): the panel groups the changes, shows a text file's diff
 * unified and side by side and an image's before and after, asks before undoing a file that
 * changed on this computer since, and Undo All puts the folder back byte for byte. */
static void
test_changes (Fixture *f, gconstpointer data)
{
        g_autofree char *state = g_build_filename (f->tmp, "state", NULL);
        g_autofree char *vm_dir = g_build_filename (state, "vms", "work", NULL);
        g_autofree char *kept = g_build_filename (state, "kept", "work", NULL);
        g_autofree char *journal = NULL, *notes_path = NULL, *kept_text = NULL;
        g_autoptr (GBytes) red = png_bytes (200, 40, 40), blue = png_bytes (30, 60, 220);
        const char *notes_before = "# Lisbon\n\nDay one: Alfama\nDay two: Belém\nDay three: "
                                   "Sintra\n";
        const char *notes_after = "# Lisbon\n\nDay one: Alfama and the castle\nDay two: Belém\n"
                                  "Day three: Sintra\nDay four: Cascais\n";
        g_autoptr (CorralDemoSource) demo = NULL;
        CorralSessionView *session;
        CorralChangesPanel *panel;
        CorralChangeWindow *review;
        GtkWidget *win = GTK_WIDGET (f->window);
        g_autofree char *unified = NULL, *before = NULL, *after = NULL, *text = NULL;
        GStatBuf st;

        g_assert_cmpint (g_mkdir_with_parents (vm_dir, 0700), ==, 0);
        g_assert_cmpint (g_mkdir_with_parents (kept, 0700), ==, 0);
        /* How the folder is now, after the assistant. */
        put (f->folder, "lisbon.md", notes_after, -1);
        put (f->folder, "packing.md", "- passport\n- charger\n", -1);
        put (f->folder, "photo.png", g_bytes_get_data (blue, NULL), g_bytes_get_size (blue));
        put (f->folder, "trips/budget.ods", "PK\x03\x04\0\0 binary", 13);
        /* The originals corral-fsd kept. */
        put (kept, "Documents/1-lisbon.md", notes_before, -1);
        put (kept, "Documents/2-photo.png", g_bytes_get_data (red, NULL), g_bytes_get_size (red));
        put (kept, "Documents/3-old-plan.txt", "the old plan\n", -1);
        g_assert_cmpint (g_stat (notes_path = g_build_filename (f->folder, "lisbon.md", NULL), &st),
                         ==, 0);
        journal = g_strdup_printf (
                "{\"t\":\"share\",\"share\":\"Documents\",\"folder\":\"%s\",\"time\":1}\n"
                "{\"t\":\"keep\",\"share\":\"Documents\",\"path\":\"lisbon.md\","
                "\"copy\":\"Documents/1-lisbon.md\",\"size\":%zu,\"mode\":384,\"mtime\":1700000000,"
                "\"mtime_ns\":0,\"time\":2}\n"
                "{\"t\":\"wrote\",\"share\":\"Documents\",\"path\":\"lisbon.md\",\"size\":%zu,"
                "\"mtime\":%" G_GINT64_FORMAT ",\"mtime_ns\":%ld,\"time\":3}\n"
                "{\"t\":\"add\",\"share\":\"Documents\",\"path\":\"packing.md\",\"kind\":\"file\","
                "\"time\":4}\n"
                "{\"t\":\"keep\",\"share\":\"Documents\",\"path\":\"photo.png\","
                "\"copy\":\"Documents/2-photo.png\",\"size\":%zu,\"mode\":384,\"time\":5}\n"
                "{\"t\":\"keep\",\"share\":\"Documents\",\"path\":\"old-plan.txt\","
                "\"copy\":\"Documents/3-old-plan.txt\",\"size\":13,\"mode\":384,\"time\":6}\n"
                "{\"t\":\"delete\",\"share\":\"Documents\",\"path\":\"old-plan.txt\","
                "\"kind\":\"file\",\"time\":7}\n"
                "{\"t\":\"add\",\"share\":\"Documents\",\"path\":\"trips\",\"kind\":\"dir\","
                "\"time\":8}\n"
                "{\"t\":\"rename\",\"share\":\"Documents\",\"path\":\"budget.ods\","
                "\"to\":\"trips/budget.ods\",\"kind\":\"file\",\"time\":9}\n",
                f->folder, strlen (notes_before), strlen (notes_after), (gint64) st.st_mtime,
                (long) st.st_mtim.tv_nsec, g_bytes_get_size (red));
        put (kept, "changes.jsonl", journal, -1);
        /* The task's space for originals, shown under the summary with what they take. */
        put (vm_dir, "shares.json", "{\"shares\": [], \"kept_space_mib\": 64}", -1);
        {
                guint64 used = 0, space = 0;
                g_autofree char *used_text = NULL, *space_text = NULL;

                g_assert_true (corral_shares_kept_space (vm_dir, &used, &space, NULL));
                g_assert_cmpuint (used, >, 0);
                g_assert_cmpuint (space, ==, (guint64) 64 << 20);
                used_text = g_format_size (used);
                space_text = g_format_size (space);
                kept_text = g_strdup_printf ("Originals kept for undo: %s of %s", used_text,
                                             space_text);
        }

        g_free (f->launcher->vm_dir);
        f->launcher->vm_dir = g_strdup (vm_dir);
        demo = start_session (f);
        session = corral_window_get_session_view (f->window);
        panel = corral_session_view_get_changes (session);
        corral_session_view_show_panel (session, "changes");
        g_assert_true (
                ui_test_wait (changes_listed, (void *[]){ panel, GUINT_TO_POINTER (6) }, 5000));
        ui_test_spin (300);
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Undo All"));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Keep All"));
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Undo change to lisbon.md"));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, kept_text));
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "11-changes");

        /* A text file: the diff, unified and side by side (aligned line for line). */
        g_assert_true (corral_changes_panel_review (panel, "Documents/lisbon.md"));
        g_assert_true (ui_test_wait (review_shown, panel, 5000));
        review = corral_changes_panel_get_review (panel);
        g_assert_cmpstr (corral_change_window_get_shown (review), ==, "text");
        unified = corral_change_window_get_text (review, "unified");
        g_assert_nonnull (
                strstr (unified, "--- a/Documents/lisbon.md\n+++ b/Documents/lisbon.md\n"));
        g_assert_nonnull (
                strstr (unified, "\n-Day one: Alfama\n+Day one: Alfama and the castle\n"));
        g_assert_nonnull (strstr (unified, "\n+Day four: Cascais\n"));
        gtk_window_set_default_size (GTK_WINDOW (review), 900, 520);
        ui_test_spin (400);
        ui_test_assert_buttons_named (GTK_WIDGET (review));
        ui_test_screenshot (GTK_WIDGET (review), "11b-change-diff");
        corral_change_window_show_side_by_side (review, TRUE);
        before = corral_change_window_get_text (review, "before");
        after = corral_change_window_get_text (review, "after");
        g_assert_cmpuint (count_lines (before), ==, count_lines (after));
        g_assert_true (g_str_has_prefix (before, "# Lisbon\n\nDay one: Alfama\n"));
        g_assert_nonnull (strstr (after, "Day four: Cascais\n"));
        ui_test_spin (300);
        ui_test_screenshot (GTK_WIDGET (review), "11c-change-side-by-side");

        /* An image: before and after. */
        g_assert_true (corral_changes_panel_review (panel, "Documents/photo.png"));
        g_assert_true (ui_test_wait (review_shown, panel, 5000));
        review = corral_changes_panel_get_review (panel);
        g_assert_cmpstr (corral_change_window_get_shown (review), ==, "image");
        gtk_window_set_default_size (GTK_WINDOW (review), 900, 520);
        ui_test_spin (400);
        ui_test_screenshot (GTK_WIDGET (review), "11d-change-image");
        /* Another file: sizes. */
        g_assert_true (corral_changes_panel_review (panel, "Documents/trips/budget.ods"));
        g_assert_true (ui_test_wait (review_shown, panel, 5000));
        g_assert_cmpstr (corral_change_window_get_shown (corral_changes_panel_get_review (panel)),
                         ==, "sizes");

        /* Changed on this computer after the assistant: undo asks first, then puts it back. */
        g_assert_true (corral_changes_panel_review (panel, "Documents/lisbon.md"));
        g_assert_true (ui_test_wait (review_shown, panel, 5000));
        put (f->folder, "lisbon.md", "the person's own edit\n", -1);
        click (GTK_WIDGET (corral_changes_panel_get_review (panel)), "Undo This Change");
        g_assert_true (ui_test_wait (changes_dialog, panel, 5000));
        g_assert_nonnull (ui_test_find (GTK_WIDGET (corral_changes_panel_get_dialog (panel)),
                                        GTK_ACCESSIBLE_ROLE_LABEL,
                                        "Undo Changes Made on This Computer Too?"));
        /* Slow builds (ASan) allocate the new dialog a little later. */
        g_assert_true (ui_test_wait (changes_dialog_shown, panel, 5000));
        ui_test_screenshot (GTK_WIDGET (corral_changes_panel_get_dialog (panel)),
                            "11e-dialog-undo-changed-since");
        text = get (f->folder, "lisbon.md");
        g_assert_cmpstr (text, ==, "the person's own edit\n");
        g_clear_pointer (&text, g_free);
        changes_answer (panel, "yes");
        g_assert_true (
                ui_test_wait (changes_listed, (void *[]){ panel, GUINT_TO_POINTER (5) }, 5000));
        text = get (f->folder, "lisbon.md");
        g_assert_cmpstr (text, ==, notes_before);
        g_clear_pointer (&text, g_free);

        /* Undo All: asked, then everything as it was. */
        click (win, "Undo All");
        g_assert_true (ui_test_wait (changes_dialog, panel, 5000));
        changes_answer (panel, "yes");
        g_assert_true (
                ui_test_wait (changes_listed, (void *[]){ panel, GUINT_TO_POINTER (0) }, 5000));
        text = get (f->folder, "old-plan.txt");
        g_assert_cmpstr (text, ==, "the old plan\n");
        g_clear_pointer (&text, g_free);
        text = get (f->folder, "budget.ods");
        g_assert_nonnull (text);
        g_clear_pointer (&text, g_free);
        {
                g_autofree char *photo = NULL;
                gsize len = 0;
                g_autofree char *path = g_build_filename (f->folder, "photo.png", NULL);

                g_assert_true (g_file_get_contents (path, &photo, &len, NULL));
                g_assert_cmpmem (photo, len, g_bytes_get_data (red, NULL), g_bytes_get_size (red));
        }
        {
                g_autofree char *trips = g_build_filename (f->folder, "trips", NULL);
                g_assert_false (g_file_test (trips, G_FILE_TEST_EXISTS));
        }
        ui_test_spin (300);
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, "No Changes Yet")
                        ?: ui_test_find (win, GTK_ACCESSIBLE_ROLE_GROUP, "No Changes Yet"));
        ui_test_screenshot (win, "11f-changes-undone");
        (void) demo;
}

/* The terminal panel against a real corral-agent on a socketpair (no VM) ----------------------- */

typedef struct {
        GPid pid;
        gboolean exited;
        CorralAgentClient *client;
} LocalAgent;

static void
local_agent_exited (GPid pid, int status, gpointer user_data)
{
        LocalAgent *agent = user_data;

        g_spawn_close_pid (pid);
        agent->exited = TRUE;
}

static void
store_result (GObject *source, GAsyncResult *result, gpointer user_data)
{
        *(GAsyncResult **) user_data = g_object_ref (result);
}

static gboolean
result_stored (gpointer data)
{
        return *(GAsyncResult **) data != NULL;
}

/* Runs as the current user, like the integration tests' agent. */
static void
local_agent_start (LocalAgent *agent)
{
        const char *path = g_getenv ("CORRAL_AGENT_PATH");
        const char *args[] = { "--user", g_get_user_name (), NULL };
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        int fd = -1;

        g_assert_nonnull (path);
        g_assert_true (
                corral_agent_client_spawn_local_agent (path, args, &agent->pid, &fd, &error));
        g_assert_no_error (error);
        g_child_watch_add (agent->pid, local_agent_exited, agent);
        agent->client = corral_agent_client_new ();
        /* The UI renders between iterations (slowly under ASan): no heartbeat to miss. */
        corral_agent_client_set_heartbeat (agent->client, 0, 0);
        corral_agent_client_connect_fd_async (agent->client, fd, NULL, store_result, &result);
        g_assert_true (ui_test_wait (result_stored, &result, 10000));
        g_assert_true (corral_agent_client_connect_fd_finish (agent->client, result, &error));
        g_assert_no_error (error);
}

static gboolean
agent_exited (gpointer data)
{
        return ((LocalAgent *) data)->exited;
}

/* EOF ends the agent. */
static void
local_agent_stop (LocalAgent *agent)
{
        corral_agent_client_close (agent->client);
        g_clear_object (&agent->client);
        g_assert_true (ui_test_wait (agent_exited, agent, 10000));
}

static char *
terminal_text (VteTerminal *term)
{
        return vte_terminal_get_text (term, NULL, NULL, NULL);
}

/* args: { VteTerminal *, const char *needle } */
static gboolean
terminal_shows (gpointer data)
{
        void **args = data;
        g_autofree char *text = terminal_text (args[0]);

        return text && strstr (text, args[1]);
}

static void
wait_terminal_shows (VteTerminal *term, const char *needle)
{
        void *args[] = { term, (void *) needle };

        if (!ui_test_wait (terminal_shows, args, 20000)) {
                g_autofree char *text = terminal_text (term);
                g_error ("the terminal never showed “%s”; it shows:\n%s", needle, text);
        }
}

static void
on_clipboard_text (GObject *source, GAsyncResult *res, gpointer user_data)
{
        char *text = gdk_clipboard_read_text_finish (GDK_CLIPBOARD (source), res, NULL);

        *(char **) user_data = text ? text : g_strdup ("");
}

static gboolean
string_set (gpointer data)
{
        return *(char **) data != NULL;
}

/* The terminal's key controller maps trigger to action. */
static gboolean
terminal_has_shortcut (VteTerminal *term, const char *trigger, const char *action)
{
        g_autoptr (GListModel) controllers = gtk_widget_observe_controllers (GTK_WIDGET (term));
        g_autoptr (GtkShortcutTrigger) want = gtk_shortcut_trigger_parse_string (trigger);

        for (guint i = 0; i < g_list_model_get_n_items (controllers); i++) {
                g_autoptr (GObject) c = g_list_model_get_item (controllers, i);

                if (!GTK_IS_SHORTCUT_CONTROLLER (c))
                        continue;
                for (guint j = 0; j < g_list_model_get_n_items (G_LIST_MODEL (c)); j++) {
                        g_autoptr (GtkShortcut) sc = g_list_model_get_item (G_LIST_MODEL (c), j);
                        GtkShortcutAction *a = gtk_shortcut_get_action (sc);

                        if (gtk_shortcut_trigger_equal (gtk_shortcut_get_trigger (sc), want) &&
                            GTK_IS_NAMED_ACTION (a) &&
                            g_str_equal (gtk_named_action_get_action_name (GTK_NAMED_ACTION (a)),
                                         action))
                                return TRUE;
                }
        }
        return FALSE;
}

/* Copy and paste, by the same actions the keys and the context menu use. */
static void
check_clipboard (CorralTerminalPanel *panel, VteTerminal *term)
{
        GdkClipboard *clipboard = gtk_widget_get_clipboard (GTK_WIDGET (term));
        g_autofree char *copied = NULL;
        GtkWidget *menu;

        g_assert_true (terminal_has_shortcut (term, "<Control><Shift>c", "terminal.copy"));
        g_assert_true (terminal_has_shortcut (term, "<Control><Shift>v", "terminal.paste"));
        g_assert_true (terminal_has_shortcut (term, "<Shift>Insert", "terminal.paste"));
        g_assert_true (terminal_has_shortcut (term, "<Shift>F10", "terminal.menu"));
        /* Pasted text reaches the shell like typed text. */
        gdk_clipboard_set_text (clipboard, "echo pasted-$((2*21))");
        g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "terminal.paste", NULL));
        ui_test_spin (300);
        vte_terminal_feed_child (term, "\r", -1);
        wait_terminal_shows (term, "pasted-42");
        /* The selection goes to the clipboard. */
        g_assert_true (
                gtk_widget_activate_action (GTK_WIDGET (panel), "terminal.select-all", NULL));
        g_assert_true (vte_terminal_get_has_selection (term));
        g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "terminal.copy", NULL));
        gdk_clipboard_read_text_async (clipboard, NULL, on_clipboard_text, &copied);
        g_assert_true (ui_test_wait (string_set, &copied, 5000));
        g_assert_nonnull (strstr (copied, "pasted-42"));
        vte_terminal_unselect_all (term);
        /* The context menu, from the keyboard. */
        g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "terminal.menu", NULL));
        ui_test_spin (300);
        menu = ui_test_find_type (GTK_WIDGET (term), GTK_TYPE_POPOVER_MENU);
        g_assert_nonnull (menu);
        g_assert_true (gtk_widget_get_mapped (menu));
        g_assert_nonnull (ui_test_find (menu, GTK_ACCESSIBLE_ROLE_LABEL, "Paste"));
        g_assert_nonnull (ui_test_find (menu, GTK_ACCESSIBLE_ROLE_LABEL, "Copy"));
        ui_test_screenshot (menu, "26-terminal-menu");
        gtk_popover_popdown (GTK_POPOVER (menu));
        ui_test_spin (100);
}

/* The shell is running and has printed something (its prompt). */
static gboolean
shell_ready (gpointer data)
{
        CorralTerminalPanel *panel = data;
        g_autofree char *text = terminal_text (corral_terminal_panel_get_terminal (panel));

        return corral_terminal_panel_get_running (panel) && text && *g_strstrip (text);
}

static gboolean
shell_ended (gpointer data)
{
        return !corral_terminal_panel_get_running (data);
}

/* args: { VteTerminal *, glong *rows, glong *cols } (the size before) */
static gboolean
grid_changed (gpointer data)
{
        void **args = data;

        return vte_terminal_get_row_count (args[0]) != *(glong *) args[1] ||
               vte_terminal_get_column_count (args[0]) != *(glong *) args[2];
}

/* The PTY in the guest has the terminal's size. */
static void
check_pty_size (VteTerminal *term)
{
        g_autofree char *expect =
                g_strdup_printf ("size:%ld %ld", vte_terminal_get_row_count (term),
                                 vte_terminal_get_column_count (term));

        vte_terminal_feed_child (term, "echo size:$(stty size)\r", -1);
        wait_terminal_shows (term, expect);
}

static void
test_terminal (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralSessionView *session = corral_window_get_session_view (f->window);
        CorralTerminalPanel *panel = corral_session_view_get_terminal (session);
        VteTerminal *term = corral_terminal_panel_get_terminal (panel);
        GtkWidget *win = GTK_WIDGET (f->window);
        LocalAgent agent = { 0 };
        AdwStyleManager *style = adw_style_manager_get_default ();
        glong rows, cols;
        void *grid_args[] = { term, &rows, &cols };
        double light, dark;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        corral_session_view_show_panel (session, "terminal");
        ui_test_spin (300);
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_GROUP, "Terminal Not Connected Yet")
                        ?: ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                         "Terminal Not Connected Yet"));
        local_agent_start (&agent);
        corral_session_view_set_agent_client (session, agent.client);
        g_assert_true (corral_terminal_panel_get_client (panel) == agent.client);
        g_assert_true (ui_test_wait (shell_ready, panel, 20000));
        g_assert_true (ui_test_find (win,
                                     gtk_accessible_get_accessible_role (GTK_ACCESSIBLE (term)),
                                     "Terminal in the workspace") == GTK_WIDGET (term));

        /* Typed text reaches the shell; its output comes back (the command line itself does not
         * contain the answer). */
        vte_terminal_feed_child (term, "echo corral-$((6*7))\r", -1);
        wait_terminal_shows (term, "corral-42");
        check_pty_size (term);
        check_clipboard (panel, term);

        /* A smaller font: more rows and columns, sent to the guest's PTY. */
        rows = vte_terminal_get_row_count (term);
        cols = vte_terminal_get_column_count (term);
        vte_terminal_set_font_scale (term, 0.8);
        g_assert_true (ui_test_wait (grid_changed, grid_args, 5000));
        ui_test_spin (200);
        vte_terminal_feed_child (term, "clear\r", -1);
        check_pty_size (term);
        g_assert_true (corral_terminal_panel_get_running (panel));
        ui_test_spin (200);
        vte_terminal_feed_child (term, "echo corral-$((6*7))\r", -1);
        wait_terminal_shows (term, "corral-42");
        ui_test_spin (300);
        ui_test_assert_buttons_named (win);
        light = ui_test_screenshot (GTK_WIDGET (term), "23-terminal-live");
        ui_test_screenshot (win, "24-terminal-window");
        /* The terminal takes the view colours of the dark style too. */
        adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_FORCE_DARK);
        ui_test_spin (500);
        dark = ui_test_screenshot (GTK_WIDGET (term), "25-terminal-dark");
        g_assert_cmpfloat (dark, <, light - 80);
        adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_DEFAULT);
        ui_test_spin (200);

        /* The shell ends: Restart starts a new one. */
        vte_terminal_feed_child (term, "exit\r", -1);
        g_assert_true (ui_test_wait (shell_ended, panel, 10000));
        ui_test_spin (400);
        click (win, "Restart");
        g_assert_true (ui_test_wait (shell_ready, panel, 20000));

        /* No workspace: the shell ends and the panel says so. */
        corral_session_view_set_agent_client (session, NULL);
        ui_test_spin (300);
        g_assert_false (corral_terminal_panel_get_running (panel));
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_GROUP, "Terminal Not Connected Yet")
                        ?: ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                         "Terminal Not Connected Yet"));
        local_agent_stop (&agent);
}

static void
test_stop (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralChatView *chat =
                corral_session_view_get_chat (corral_window_get_session_view (f->window));

        corral_chat_view_send (chat, "Do it");
        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        g_assert_cmpuint (corral_chat_view_count_tool_cards (chat, "running"), >, 0);
        click (GTK_WIDGET (f->window), "Stop");
        g_assert_true (ui_test_wait (not_busy, chat, 2000));
        ui_test_spin (100);
        /* No spinner goes on after Stop: what was running says it was stopped. */
        g_assert_cmpuint (corral_chat_view_count_tool_cards (chat, "running"), ==, 0);
        g_assert_cmpuint (corral_chat_view_count_tool_cards (chat, "stopped"), >, 0);
        g_assert_null (corral_chat_view_get_approval_dialog (chat));
        g_assert_false (corral_demo_source_is_busy (demo));
        /* The question disappeared unanswered: that counts as a no. */
        g_assert_cmpuint (corral_demo_source_get_answers (demo)->len, ==, 1);
        g_assert_cmpstr (corral_demo_source_get_answers (demo)->pdata[0], ==, "delete:deny");
}

static gboolean
loaded_n (gpointer data)
{
        void **args = data;
        return corral_shares_panel_get_n_shares (args[0]) == GPOINTER_TO_UINT (args[1]);
}

static FsMode
share_mode (const char *vm_dir, const char *name)
{
        g_autoptr (GPtrArray) shares = corral_shares_list (vm_dir, NULL);

        for (guint i = 0; shares && i < shares->len; i++)
                if (g_str_equal (((CorralShare *) shares->pdata[i])->name, name))
                        return ((CorralShare *) shares->pdata[i])->mode;
        return (FsMode) -1;
}

static gboolean
mode_is (gpointer data)
{
        void **args = data;
        return share_mode (args[0], "Documents") == (FsMode) GPOINTER_TO_UINT (args[1]);
}

static void
test_shares (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralSessionView *session = corral_window_get_session_view (f->window);
        CorralSharesPanel *panel = corral_session_view_get_shares (session);
        g_autofree char *photos = g_build_filename (f->tmp, "Photos", NULL);
        void *one[] = { panel, GUINT_TO_POINTER (1) };
        void *two[] = { panel, GUINT_TO_POINTER (2) };
        void *rw[] = { f->vm_dir, GUINT_TO_POINTER (FS_MODE_RW) };
        GtkWidget *combo;
        g_autofree char *host = NULL, *home_name = NULL, *stop = NULL;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        g_assert_cmpint (g_mkdir (photos, 0700), ==, 0);
        corral_session_view_show_panel (session, "folders");
        g_assert_true (ui_test_wait (loaded_n, one, 5000));
        ui_test_spin (300);
        combo = ui_test_find_type (GTK_WIDGET (panel), ADW_TYPE_COMBO_ROW);
        g_assert_nonnull (combo);
        g_assert_null (gtk_test_accessible_check_property (
                GTK_ACCESSIBLE (combo), GTK_ACCESSIBLE_PROPERTY_LABEL,
                "What the assistant may do in Documents"));
        g_assert_cmpuint (adw_combo_row_get_selected (ADW_COMBO_ROW (combo)), ==,
                          FS_MODE_RW_NODELETE);
        ui_test_screenshot (GTK_WIDGET (f->window), "13-shares");
        /* The person changes the mode in the row: the share list follows. */
        adw_combo_row_set_selected (ADW_COMBO_ROW (combo), FS_MODE_RW);
        g_assert_true (ui_test_wait (mode_is, rw, 5000));
        corral_shares_panel_add (panel, photos, FS_MODE_RO);
        g_assert_true (ui_test_wait (loaded_n, two, 5000));
        host = corral_shares_panel_host_path (panel, "/workspace/Documents/a/b.txt");
        g_assert_true (g_str_has_suffix (host, "/Documents/a/b.txt"));
        g_assert_null (corral_shares_panel_host_path (panel, "/workspace/Documents/../x"));
        g_signal_emit_by_name (ui_test_find (GTK_WIDGET (panel), GTK_ACCESSIBLE_ROLE_BUTTON,
                                             "Stop sharing Photos"),
                               "clicked");
        g_assert_true (ui_test_wait (loaded_n, one, 5000));
        g_assert_null (corral_shares_panel_get_error (panel));

        /* The home folder: shared, its row open with the warning in words. */
        corral_shares_panel_add (panel, g_get_home_dir (), FS_MODE_RO);
        g_assert_true (ui_test_wait (loaded_n, two, 5000));
        g_assert_null (corral_shares_panel_get_error (panel));
        ui_test_spin (300);
        g_assert_nonnull (ui_test_find (GTK_WIDGET (panel), GTK_ACCESSIBLE_ROLE_LABEL,
                                        corral_ui_folder_warning (g_get_home_dir ())));
        ui_test_screenshot (GTK_WIDGET (f->window), "13b-shares-home");
        home_name = fs_share_name_for_path (g_get_home_dir ());
        stop = g_strdup_printf ("Stop sharing %s", home_name);
        g_signal_emit_by_name (ui_test_find (GTK_WIDGET (panel), GTK_ACCESSIBLE_ROLE_BUTTON, stop),
                               "clicked");
        g_assert_true (ui_test_wait (loaded_n, one, 5000));
}

static gboolean
prefs_loaded (gpointer data)
{
        return corral_preferences_get_loaded (data);
}

static gboolean
switch_on (gpointer toggle)
{
        return gtk_switch_get_active (toggle);
}

static gboolean
credential_listed (gpointer prefs)
{
        return ui_test_find (prefs, GTK_ACCESSIBLE_ROLE_BUTTON, "Remove corral_ui_test") != NULL;
}

static gboolean
credential_gone (gpointer prefs)
{
        return !credential_listed (prefs);
}

/* A stored key cannot be seen again: removing it asks, Cancel keeps it, Remove removes it. */
static void
store_test_key (void)
{
        const char *hosts[] = { "example.com", NULL };
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralSecretInfo) info =
                corral_secret_info_new ("corral_ui_test", hosts, "x-api-key", "{}", &error);

        g_assert_no_error (error);
        g_assert_true (corral_secret_store_set_sync (info, "test-value", NULL, &error));
        g_assert_no_error (error);
}

static void
remove_key_asks_first (GtkWindow *prefs)
{
        GtkWidget *dialog;

        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "credentials");
        g_assert_true (ui_test_wait (credential_listed, prefs, 10000));
        click (GTK_WIDGET (prefs), "Remove corral_ui_test");
        dialog = corral_preferences_get_remove_dialog (CORRAL_PREFERENCES (prefs));
        g_assert_nonnull (dialog);
        g_assert_nonnull (ui_test_find (dialog, GTK_ACCESSIBLE_ROLE_BUTTON, "Cancel"));
        ui_test_spin (300);
        ui_test_screenshot (dialog, "15b-dialog-remove-key");
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        gtk_window_destroy (GTK_WINDOW (dialog));
        ui_test_spin (300);
        g_assert_true (credential_listed (prefs));
        click (GTK_WIDGET (prefs), "Remove corral_ui_test");
        dialog = corral_preferences_get_remove_dialog (CORRAL_PREFERENCES (prefs));
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (dialog), "remove");
        gtk_window_destroy (GTK_WINDOW (dialog));
        g_assert_true (ui_test_wait (credential_gone, prefs, 10000));
}

static gboolean
openai_key_listed (gpointer prefs)
{
        return ui_test_find (prefs, GTK_ACCESSIBLE_ROLE_BUTTON, "Remove openai") != NULL;
}

static gboolean
key_refused_toast (gpointer prefs)
{
        return ui_test_find (prefs, GTK_ACCESSIBLE_ROLE_LABEL, corral_ui_key_refused_text ()) !=
               NULL;
}

static void
add_credential (GtkWindow *prefs, const char *name, const char *host, const char *value)
{
        GtkWidget *p = GTK_WIDGET (prefs);

        gtk_editable_set_text (GTK_EDITABLE (ui_test_find (p, GTK_ACCESSIBLE_ROLE_TEXT_BOX, "Name")
                                                     ?: ui_test_find_type (p, ADW_TYPE_ENTRY_ROW)),
                               name);
        gtk_editable_set_text (
                GTK_EDITABLE (ui_test_find (p, GTK_ACCESSIBLE_ROLE_TEXT_BOX, "Host")), host);
        gtk_editable_set_text (GTK_EDITABLE (ui_test_find_type (p, ADW_TYPE_PASSWORD_ENTRY_ROW)),
                               value);
        click (p, "Add");
}

/* A model provider's key added in Preferences is checked with one request first: a refused
 * one is said in a toast and not kept; an accepted one is listed. */
static void
model_key_checked (GtkWindow *prefs)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralFakeLlmServer) fake = corral_fake_llm_server_new (0, &error);
        g_autofree char *url = NULL, *base = NULL;

        g_assert_no_error (error);
        url = corral_fake_llm_server_get_url (fake);
        base = g_strconcat (url, "/v1", NULL);
        g_setenv ("OPENAI_BASE_URL", base, TRUE);
        corral_fake_llm_server_set_valid_key (fake, "sk-openai-right");
        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "credentials");
        ui_test_spin (300);
        add_credential (prefs, "openai", "api.openai.com", "sk-openai-wrong");
        g_assert_true (ui_test_wait (key_refused_toast, prefs, 20000));
        ui_test_spin (500);
        g_assert_false (openai_key_listed (prefs));
        add_credential (prefs, "openai", "api.openai.com", "sk-openai-right");
        g_assert_true (ui_test_wait (openai_key_listed, prefs, 20000));
        g_assert_cmpuint (corral_fake_llm_server_get_n_key_checks (fake), ==, 2);
        g_unsetenv ("OPENAI_BASE_URL");
        ui_test_spin (200); /* the checks' connections close before the server goes */
}

static void
test_preferences (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        GtkWindow *prefs = (store_test_key (), corral_window_show_preferences (f->window));
        static const char *const pages[] = { "assistant", "credentials", "network", "tools",
                                             "workspace" };
        g_autoptr (GError) error = NULL;
        g_autofree char *policy_path = g_build_filename (f->vm_dir, "egress-policy.json", NULL);
        g_autoptr (CorralEgressPolicy) policy = NULL;
        GtkWidget *toggle, *row;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        gtk_window_set_default_size (prefs, 700, 720);
        g_assert_true (ui_test_wait (prefs_loaded, prefs, 10000));
        ui_test_spin (400);
        g_assert_true (
                corral_preferences_allow_site (CORRAL_PREFERENCES (prefs), "pypi.org", &error));
        g_assert_no_error (error);
        g_assert_false (
                corral_preferences_allow_site (CORRAL_PREFERENCES (prefs), "bad host!", &error));
        g_clear_error (&error);
        /* The running task's policy file got the rule. */
        policy = corral_egress_policy_load_file (policy_path, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (corral_egress_policy_get_rules (policy, TRUE)->len, ==, 1);
        remove_key_asks_first (prefs);
        model_key_checked (prefs);
        for (guint i = 0; i < G_N_ELEMENTS (pages); i++) {
                g_autofree char *name = g_strdup_printf ("%02u-preferences-%s", 14 + i, pages[i]);

                corral_preferences_show_page (CORRAL_PREFERENCES (prefs), pages[i]);
                ui_test_spin (400);
                ui_test_assert_buttons_named (GTK_WIDGET (prefs));
                ui_test_screenshot (GTK_WIDGET (prefs), name);
        }
        g_assert_nonnull (
                ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_GROUP, "Memory")
                        ?: ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_LABEL, "Memory"));
        /* The space for undo: its spin button sets the key new tasks read (F21). */
        {
                GtkWidget *spin = ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_SPIN_BUTTON,
                                                "Space for Undo");

                g_assert_nonnull (spin);
                g_assert_cmpfloat (gtk_spin_button_get_value (GTK_SPIN_BUTTON (spin)), ==,
                                   FS_KEPT_SPACE_DEFAULT_MIB);
                gtk_spin_button_set_value (GTK_SPIN_BUTTON (spin), 8192);
                g_assert_cmpuint (g_settings_get_uint (f->settings, "kept-space-mib"), ==, 8192);
                /* Nothing below what the file server accepts. */
                gtk_spin_button_set_value (GTK_SPIN_BUTTON (spin), 1);
                g_assert_cmpuint (g_settings_get_uint (f->settings, "kept-space-mib"), ==,
                                  FS_KEPT_SPACE_MIN_MIB);
                g_settings_reset (f->settings, "kept-space-mib");
        }
        /* Off by default; activating its row, as a click does, turns it on and sets the key. */
        toggle = ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_SWITCH,
                               "Let Programs Use Blocked System Calls");
        g_assert_nonnull (toggle);
        row = gtk_widget_get_ancestor (toggle, ADW_TYPE_ACTION_ROW);
        g_assert_nonnull (row);
        g_assert_false (gtk_switch_get_active (GTK_SWITCH (toggle)));
        g_assert_false (g_settings_get_boolean (f->settings, "unconfined-commands"));
        adw_action_row_activate (ADW_ACTION_ROW (row));
        /* The switch moves (an animation) before it is on. */
        g_assert_true (ui_test_wait (switch_on, toggle, 2000));
        g_assert_true (g_settings_get_boolean (f->settings, "unconfined-commands"));
        g_settings_set_boolean (f->settings, "unconfined-commands", FALSE);
        g_assert_false (gtk_switch_get_active (GTK_SWITCH (toggle)));
        gtk_window_destroy (prefs);
}

static void
test_locked (Fixture *f, gconstpointer data)
{
        g_autofree char *dir = g_build_filename (f->tmp, "settings", NULL);
        g_autofree char *path = g_build_filename (dir, "keyfile", NULL);
        g_autoptr (GSettingsBackend) backend = NULL;
        g_autoptr (GSettings) settings = NULL;
        GtkWindow *prefs;
        GtkWidget *row;

        g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
        /* An administrator's lockdown, as GSettings reports it: a backend that refuses writes
         * to every key of the schema (they lie outside the paths it may write). */
        backend = g_keyfile_settings_backend_new (path, "/org/corral/Corral/locked/", NULL);
        settings = g_settings_new_with_backend ("org.corral.Corral", backend);
        g_assert_false (g_settings_is_writable (settings, "network-preset"));
        prefs = GTK_WINDOW (corral_preferences_new (GTK_WINDOW (f->window), settings, NULL));
        gtk_window_set_default_size (prefs, 700, 720);
        gtk_window_present (prefs);
        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "network");
        g_assert_true (ui_test_wait (prefs_loaded, prefs, 10000));
        ui_test_spin (400);
        row = ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_GROUP, "Access")
                      ?: ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_COMBO_BOX, "Access");
        g_assert_nonnull (ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_GROUP,
                                        "Set by your organisation")
                                  ?: ui_test_find (GTK_WIDGET (prefs), GTK_ACCESSIBLE_ROLE_LABEL,
                                                   "Set by your organisation"));
        if (row)
                g_assert_false (gtk_widget_is_sensitive (row));
        ui_test_screenshot (GTK_WIDGET (prefs), "19-preferences-locked");
        gtk_window_destroy (prefs);
}

/* The AdwActionRow titled title (found through its title label), or NULL. */
static GtkWidget *
find_row (GtkWidget *root, const char *title)
{
        GtkWidget *w = ui_test_find (root, GTK_ACCESSIBLE_ROLE_GROUP, title)
                               ?: ui_test_find (root, GTK_ACCESSIBLE_ROLE_LABEL, title);

        if (w && !ADW_IS_ACTION_ROW (w))
                w = gtk_widget_get_ancestor (w, ADW_TYPE_ACTION_ROW) ?: w;
        return w;
}

/* The organisation's managed policy in Preferences (README, "Decisions"): the rows it locks are
 * insensitive with the reason under them, a maximum caps its spin button, and the
 * Organisation page lists every setting with its value and file; a damaged policy is said
 * there instead. */
static void
test_policy_page (Fixture *f, gconstpointer data)
{
        g_autofree char *policy = g_build_filename (f->tmp, "managed.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        GtkWindow *prefs;
        GtkWidget *win, *spin, *page_row;

        g_assert_true (g_file_set_contents (
                policy,
                "{\"providers\": {\"baseUrl\": \"https://llm.corp.example/v1\"},\n"
                " \"images\": {\"required\": \"standard\"},\n"
                " \"network\": {\"personMayApproveHosts\": false, \"deniedHosts\": "
                "[\"pastebin.com\"]},\n"
                " \"vm\": {\"maxMemoryMib\": 2048, \"maxVcpus\": {\"value\": 1, \"locked\": "
                "false}},\n"
                " \"sharedFolders\": {\"protectedPaths\": [\"deploy/\"]}}\n",
                -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        g_settings_set_uint (f->settings, "memory-mib", 4096);
        prefs = GTK_WINDOW (corral_preferences_new (GTK_WINDOW (f->window), f->settings, NULL));
        win = GTK_WIDGET (prefs);
        gtk_window_set_default_size (prefs, 700, 720);
        gtk_window_present (prefs);
        g_assert_true (ui_test_wait (prefs_loaded, prefs, 10000));
        ui_test_spin (400);

        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "assistant");
        ui_test_spin (200);
        g_assert_nonnull (find_row (win, "Set by your organisation"));
        g_assert_nonnull (find_row (win, "The model server is https://llm.corp.example/v1."));

        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "workspace");
        ui_test_spin (300);
        spin = ui_test_find (win, GTK_ACCESSIBLE_ROLE_SPIN_BUTTON, "Memory");
        g_assert_nonnull (spin);
        /* Capped: the person's 4096 comes down to the organisation's maximum. */
        g_assert_cmpfloat (gtk_spin_button_get_value (GTK_SPIN_BUTTON (spin)), ==, 2048);
        g_assert_cmpuint (g_settings_get_uint (f->settings, "memory-mib"), ==, 2048);
        g_assert_nonnull (find_row (win, "At most 2048 MiB, set by your organisation"));
        /* A default the person may change is not a cap. */
        g_assert_null (find_row (win, "At most 1, set by your organisation"));
        g_assert_nonnull (find_row (win, "Every task uses the image “standard”."));
        ui_test_screenshot (win, "20-preferences-policy-locks");

        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "organisation");
        ui_test_spin (400);
        g_assert_nonnull (find_row (win, "Your Organisation’s Policy"));
        page_row = find_row (win, "network.deniedHosts");
        g_assert_nonnull (page_row);
        {
                g_autofree char *want = g_strdup_printf ("pastebin.com · Locked · from %s", policy);
                g_assert_cmpstr (adw_action_row_get_subtitle (ADW_ACTION_ROW (page_row)), ==, want);
        }
        g_assert_nonnull (find_row (win, "vm.maxVcpus"));
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "21-preferences-organisation");
        gtk_window_destroy (prefs);

        /* Damaged: the page says what is wrong and that no task starts. */
        g_assert_true (g_file_set_contents (policy, "{\"vm\": {\"maxVcpus\": 0}}", -1, NULL));
        prefs = GTK_WINDOW (corral_preferences_new (GTK_WINDOW (f->window), f->settings, NULL));
        win = GTK_WIDGET (prefs);
        gtk_window_set_default_size (prefs, 700, 720);
        gtk_window_present (prefs);
        g_assert_true (ui_test_wait (prefs_loaded, prefs, 10000));
        corral_preferences_show_page (CORRAL_PREFERENCES (prefs), "organisation");
        ui_test_spin (400);
        page_row = find_row (win, "No task can start until it is fixed");
        g_assert_nonnull (page_row);
        g_assert_nonnull (
                strstr (adw_action_row_get_subtitle (ADW_ACTION_ROW (page_row)), "vm.maxVcpus"));
        ui_test_screenshot (win, "22-preferences-policy-damaged");
        gtk_window_destroy (prefs);

        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        g_settings_reset (f->settings, "memory-mib");
}

static gboolean
label_shown (gpointer data)
{
        void **args = data;

        return ui_test_find (args[0], GTK_ACCESSIBLE_ROLE_LABEL, args[1]) != NULL;
}

static gboolean
label_gone (gpointer data)
{
        return !label_shown (data);
}

/* A damaged policy is said on the folder step before the person chooses anything (SECURITY.md
 * M1: no task starts), and goes away once it is fixed. */
static void
test_policy_banner (Fixture *f, gconstpointer data)
{
        g_autofree char *policy = g_build_filename (f->tmp, "managed.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autofree char *text = NULL;
        CorralFirstRun *fr = corral_window_get_first_run (f->window);
        GtkWidget *win = GTK_WIDGET (f->window);
        g_autoptr (GError) error = NULL;

        g_assert_true (
                g_file_set_contents (policy, "{\"network\": {\"preset\": \"al\"}}", -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        g_assert_false (corral_task_check_managed_policy (&error));
        text = g_strdup_printf (
                "No task can start until your organisation\u2019s policy is fixed. %s",
                error->message);
        corral_first_run_show_step (fr, "folder");
        g_assert_true (ui_test_wait (label_shown, (void *[]){ win, text }, 5000));
        ui_test_spin (200);
        ui_test_screenshot (win, "23-policy-damaged-banner");

        g_assert_true (g_file_set_contents (policy, "{}", -1, NULL));
        corral_first_run_show_step (fr, "folder");
        g_assert_true (ui_test_wait (label_gone, (void *[]){ win, text }, 5000));
        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
}

static gboolean
row_insensitive (gpointer data)
{
        void **args = data;
        GtkWidget *check = ui_test_find (args[0], GTK_ACCESSIBLE_ROLE_CHECKBOX, args[1]);
        GtkWidget *row;

        if (!check)
                check = ui_test_find (args[0], GTK_ACCESSIBLE_ROLE_RADIO, args[1]);
        g_assert_nonnull (check);
        row = gtk_widget_get_ancestor (check, ADW_TYPE_ACTION_ROW);
        return row && !gtk_widget_get_sensitive (row);
}

static gboolean
widget_sensitive (gpointer widget)
{
        return gtk_widget_get_sensitive (widget);
}

static gboolean
widget_insensitive (gpointer widget)
{
        return !gtk_widget_get_sensitive (widget);
}

/* The folder step says what the organisation allows for the chosen folder (SECURITY.md M2):
 * modes beyond its widest greyed out with the reason, the choice narrowed; a folder it does not
 * let be shared named, and Start off. */
static void
test_policy_folder_modes (Fixture *f, gconstpointer data)
{
        g_autofree char *policy = g_build_filename (f->tmp, "managed.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autofree char *text = NULL, *real = realpath (f->tmp, NULL);
        CorralFirstRun *fr = corral_window_get_first_run (f->window);
        GtkWidget *win = GTK_WIDGET (f->window);
        GtkWidget *start;

        g_assert_true (g_file_set_contents (
                policy, "{\"sharedFolders\": {\"maxMode\": \"rw-nodelete\"}}", -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);
        corral_first_run_show_step (fr, "folder");
        corral_first_run_set_mode (fr, FS_MODE_RW);
        corral_first_run_set_folder (fr, f->tmp);
        g_assert_true (ui_test_wait (
                row_insensitive, (void *[]){ win, (void *) fs_mode_describe (FS_MODE_RW) }, 5000));
        g_assert_cmpint (corral_first_run_get_mode (fr), ==, FS_MODE_RW_NODELETE);
        g_assert_false (row_insensitive (
                (void *[]){ win, (void *) fs_mode_describe (FS_MODE_RW_NODELETE) }));
        g_assert_false (
                row_insensitive ((void *[]){ win, (void *) fs_mode_describe (FS_MODE_RO) }));
        start = ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Start");
        g_assert_true (gtk_widget_get_sensitive (start));
        ui_test_spin (200);
        ui_test_screenshot (win, "24-policy-folder-modes");

        /* A folder the organisation does not let be shared: said, and no Start. */
        text = g_strdup_printf ("{\"sharedFolders\": {\"deniedFolders\": [\"%s\"]}}", real);
        g_assert_true (g_file_set_contents (policy, text, -1, NULL));
        corral_first_run_set_folder (fr, f->tmp);
        g_assert_true (ui_test_wait (widget_insensitive, start, 5000));
        ui_test_spin (200);
        ui_test_screenshot (win, "25-policy-folder-denied");

        /* Computer use locked off: the switch greyed out, saying whose rule, and off. */
        {
                GtkWidget *screen = ui_test_find (win, GTK_ACCESSIBLE_ROLE_SWITCH,
                                                  "Let the assistant use a screen");

                corral_first_run_set_computer_use (fr, TRUE);
                g_assert_true (g_file_set_contents (
                        policy, "{\"computerUse\": {\"allowed\": false}}", -1, NULL));
                corral_first_run_set_folder (fr, f->tmp);
                g_assert_true (ui_test_wait (widget_insensitive,
                                             gtk_widget_get_ancestor (screen, ADW_TYPE_ACTION_ROW),
                                             5000));
                g_assert_false (corral_first_run_get_computer_use (fr));
                g_assert_false (gtk_switch_get_active (GTK_SWITCH (screen)));
                g_assert_nonnull (ui_test_find (
                        win, GTK_ACCESSIBLE_ROLE_LABEL,
                        "Computer use (a screen the assistant sees and drives) is turned off (set "
                        "by your organisation)."));
                ui_test_spin (200);
                ui_test_screenshot (win, "25b-policy-computer-use-off");
        }

        /* No policy: every mode again. */
        g_assert_true (g_file_set_contents (policy, "{}", -1, NULL));
        corral_first_run_set_folder (fr, f->tmp);
        g_assert_true (ui_test_wait (widget_sensitive, start, 5000));
        g_assert_false (
                row_insensitive ((void *[]){ win, (void *) fs_mode_describe (FS_MODE_RW) }));
        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
}

static void
test_dark (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralChatView *chat =
                corral_session_view_get_chat (corral_window_get_session_view (f->window));
        AdwStyleManager *style = adw_style_manager_get_default ();
        double light, dark;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        corral_chat_view_send (chat, "Tidy up");
        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        answer (chat, "deny");
        g_assert_true (ui_test_wait (has_dialog, chat, 5000));
        answer (chat, "task");
        g_assert_true (ui_test_wait (not_busy, chat, 5000));
        ui_test_spin (300);
        light = ui_test_screenshot (GTK_WIDGET (f->window), "20-light");
        adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_FORCE_DARK);
        ui_test_spin (500);
        g_assert_true (adw_style_manager_get_dark (style));
        dark = ui_test_screenshot (GTK_WIDGET (f->window), "21-dark");
        g_assert_cmpfloat (dark, <, light - 80);
        adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_DEFAULT);
        ui_test_spin (200);
}

/* Large text (the accessibility setting: a higher font resolution) still fits: the message
 * entry, the send button and the side panel's switcher stay on screen and the render is real. */
static void
test_large_text (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        GtkSettings *gs = gtk_settings_get_default ();
        GtkWidget *win = GTK_WIDGET (f->window);
        GtkWidget *send;
        graphene_rect_t bounds;
        int dpi = 0;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        g_object_get (gs, "gtk-xft-dpi", &dpi, NULL);
        g_object_set (gs, "gtk-xft-dpi", 96 * 1024 * 3 / 2, NULL);
        ui_test_spin (600);
        send = ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Send");
        g_assert_nonnull (send);
        g_assert_true (gtk_widget_compute_bounds (send, win, &bounds));
        g_assert_cmpfloat (bounds.origin.x + bounds.size.width, <=, gtk_widget_get_width (win));
        g_assert_cmpfloat (bounds.origin.y + bounds.size.height, <=, gtk_widget_get_height (win));
        ui_test_screenshot (win, "26-large-text");
        g_object_set (gs, "gtk-xft-dpi", dpi > 0 ? dpi : 96 * 1024, NULL);
        ui_test_spin (200);
}

static void
test_close_pauses (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        GtkWidget *dialog;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        gtk_window_close (GTK_WINDOW (f->window));
        ui_test_spin (200);
        dialog = corral_window_get_close_dialog (f->window);
        g_assert_nonnull (dialog);
        g_assert_true (gtk_widget_get_visible (GTK_WIDGET (f->window)));
        ui_test_screenshot (dialog, "22-close");
        g_object_ref (f->window);
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (dialog), "pause");
        gtk_window_destroy (GTK_WINDOW (dialog));
        ui_test_spin (200);
        g_assert_cmpuint (f->launcher->suspended, ==, 1);
        /* The workspace made ready ahead goes too, though the window was destroyed. */
        g_assert_cmpuint (f->launcher->released, ==, 1);
        f->closed = TRUE;
}

/* Told to stop (SIGTERM when the session ends, SIGINT, SIGHUP): no one to ask, so the running
 * task pauses and the workspace made ready ahead is released, instead of both running on
 * without the app; a question already open is dropped. */
static void
test_close_now (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        gtk_window_close (GTK_WINDOW (f->window));
        ui_test_spin (100);
        g_assert_nonnull (corral_window_get_close_dialog (f->window));
        g_object_ref (f->window);
        corral_window_close_now (f->window);
        ui_test_spin (200);
        g_assert_null (corral_window_get_close_dialog (f->window));
        g_assert_cmpuint (f->launcher->suspended, ==, 1);
        g_assert_cmpuint (f->launcher->released, ==, 1);
        /* A second signal does nothing more. */
        corral_window_close_now (f->window);
        ui_test_spin (100);
        g_assert_cmpuint (f->launcher->suspended, ==, 1);
        f->closed = TRUE;
}

/* A card's icon and words say what happened: running, done, failed (an error, a refusal, or a
 * command that exited with another status than 0 or was killed, whatever the call's own result
 * says), stopped (the task ended while it ran). */
static void
test_tool_card_states (void)
{
        struct {
                const char *tool;
                gboolean finished, is_error, stop;
                int exit_code;
                const char *state, *words;
                const char *outcome; /* request_approval: the person's answer */
        } cases[] = {
                { "shell", FALSE, FALSE, FALSE, -1, "running", "Running a command: Working…" },
                { "shell", TRUE, FALSE, FALSE, 0, "done", "Ran a command: Done" },
                { "shell", TRUE, FALSE, FALSE, 1, "failed",
                  "A command did not work: It did not work; Details say why" },
                { "shell", TRUE, FALSE, FALSE, -1, "failed",
                  "A command did not work: It did not work; Details say why" },
                { "shell", FALSE, FALSE, TRUE, -1, "stopped",
                  "Ran a command: Stopped before it finished" },
                { "shell", TRUE, FALSE, TRUE, 0, "done", "Ran a command: Done" },
                { "create", FALSE, FALSE, FALSE, -1, "running", "Writing ls: Working…" },
                { "create", TRUE, TRUE, FALSE, -1, "failed",
                  "Wrote ls: It did not work; Details say why" },
                { "request_approval", TRUE, TRUE, FALSE, -1, "done",
                  "Asked to delete report.docx: You said no", "denied" },
                { "request_approval", TRUE, FALSE, FALSE, -1, "done",
                  "Asked to delete report.docx: You allowed it", "done" },
                { "request_approval", TRUE, TRUE, FALSE, -1, "failed",
                  "Asked to delete report.docx: It did not work; Details say why", "failed" },
        };

        for (gsize i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (CorralChatTool) tool = corral_chat_tool_new (
                        "id", cases[i].tool,
                        cases[i].outcome ? "delete /workspace/Documents/report.docx" : "ls");
                GtkWidget *card;
                g_autofree char *diff = NULL;

                if (g_str_equal (cases[i].tool, "shell"))
                        tool->command = g_strdup ("ls");
                card = g_object_ref_sink (corral_tool_card_new (tool));
                tool->finished = cases[i].finished;
                tool->is_error = cases[i].is_error;
                tool->exit_code = cases[i].exit_code;
                tool->outcome = g_strdup (cases[i].outcome);
                if (tool->finished) {
                        tool->output = g_strdup ("");
                        corral_tool_card_update (CORRAL_TOOL_CARD (card), tool);
                }
                if (cases[i].stop)
                        corral_tool_card_stop (CORRAL_TOOL_CARD (card));
                g_assert_cmpstr (corral_tool_card_get_state (CORRAL_TOOL_CARD (card)), ==,
                                 cases[i].state);
                /* NULL: the card's accessible name is the expected words */
                diff = gtk_test_accessible_check_property (
                        GTK_ACCESSIBLE (card), GTK_ACCESSIBLE_PROPERTY_LABEL, cases[i].words);
                g_assert_cmpstr (diff, ==, NULL);
                g_object_unref (card);
        }
}

/* The window opens at the size it was closed at, launch after launch: what is kept is the
 * window's size, not its widget's allocation (which leaves out the client-side decorations'
 * margins and once shrank the window at every launch until the Start button was cut off). */
static void
test_size_kept (Fixture *f, gconstpointer data)
{
        g_object_ref (f->window);
        gtk_window_close (GTK_WINDOW (f->window));
        ui_test_spin (100);
        g_object_unref (f->window);
        for (int launch = 0; launch < 3; launch++) {
                g_assert_cmpint (g_settings_get_int (f->settings, "window-width"), ==, 1100);
                g_assert_cmpint (g_settings_get_int (f->settings, "window-height"), ==, 760);
                f->window = corral_window_new (NULL, CORRAL_LAUNCHER (f->launcher), f->settings);
                gtk_window_present (GTK_WINDOW (f->window));
                ui_test_spin (200);
                g_object_ref (f->window);
                gtk_window_close (GTK_WINDOW (f->window));
                ui_test_spin (100);
                if (launch < 2)
                        g_object_unref (f->window);
        }
        f->closed = TRUE;
}

/* Another task starts: the one shown until then pauses, instead of running on until the app
 * quits. */
static void
test_new_task_pauses (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        CorralFirstRun *fr = corral_window_get_first_run (f->window);
        g_autofree char *other = g_build_filename (f->tmp, "Other", NULL);

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        g_assert_cmpint (g_mkdir (other, 0700), ==, 0);
        corral_window_new_task (f->window);
        ui_test_spin (200);
        /* Choosing is not starting: nothing paused yet, and Back returns to the task. */
        g_assert_cmpuint (f->launcher->suspended, ==, 0);
        click (GTK_WIDGET (f->window), "Back to the Task");
        g_assert_cmpstr (corral_window_get_page (f->window), ==, "session");
        g_assert_null (ui_test_find (GTK_WIDGET (f->window), GTK_ACCESSIBLE_ROLE_BUTTON,
                                     "Back to the Task"));
        corral_window_new_task (f->window);
        ui_test_spin (200);
        corral_first_run_set_folder (fr, other);
        click (GTK_WIDGET (f->window), "Start");
        wait_page (f, "starting");
        ui_test_spin (100);
        g_assert_cmpuint (f->launcher->suspended, ==, 1);
        test_launcher_finish (f->launcher);
        wait_page (f, "session");
}

/* An earlier conversation as the assistant loop keeps it: a task, a reply with a tool call, its
 * result, and the closing words. */
static CorralLlmConversation *
earlier_conversation (void)
{
        CorralLlmConversation *conv = corral_llm_conversation_new ("test-model", 1024);
        g_autoptr (CorralLlmResponse) first = corral_llm_response_new ();
        g_autoptr (CorralLlmResponse) last = corral_llm_response_new ();
        g_autoptr (CorralLlmResponse) ask = corral_llm_response_new ();
        cJSON *input = cJSON_CreateObject ();
        cJSON *question = cJSON_CreateObject ();

        cJSON_AddStringToObject (question, "action", "delete");
        cJSON_AddStringToObject (question, "path", "/workspace/Documents/report-old.docx");
        cJSON_AddStringToObject (question, "reason", "it is an older copy");

        cJSON_AddStringToObject (input, "command", "ls /workspace/Documents");
        corral_llm_conversation_add_user_text (conv, "List the reports in this folder");
        g_ptr_array_add (first->blocks, corral_llm_block_new_text ("\n\nLet me look."));
        g_ptr_array_add (first->blocks, corral_llm_block_new_tool_use ("call-1", "shell", input));
        first->stop_reason = CORRAL_LLM_STOP_TOOL_USE;
        corral_llm_conversation_add_response (conv, first);
        corral_llm_conversation_add_tool_result (conv, "call-1", "report-old.docx\n[exit status 0]",
                                                 FALSE);
        /* A question the person said no to (the loop keeps the answer with the result). */
        g_ptr_array_add (ask->blocks,
                         corral_llm_block_new_tool_use ("call-2", "request_approval", question));
        ask->stop_reason = CORRAL_LLM_STOP_TOOL_USE;
        corral_llm_conversation_add_response (conv, ask);
        corral_llm_conversation_add_tool_result (conv, "call-2", "The person declined.", TRUE);
        {
                CorralLlmMessage *m = conv->messages->pdata[conv->messages->len - 1];
                ((CorralLlmBlock *) m->blocks->pdata[0])->outcome = g_strdup ("denied");
        }
        g_ptr_array_add (last->blocks,
                         corral_llm_block_new_text ("There is one report: report-old.docx."));
        corral_llm_conversation_add_response (conv, last);
        return conv;
}

static gboolean
record_written (gpointer vm_name)
{
        g_autoptr (CorralTaskRecord) record = corral_task_record_load (vm_name, NULL);
        return record != NULL;
}

static gboolean
tasks_loaded (gpointer window)
{
        return corral_tasks_page_get_loaded (corral_window_get_tasks_page (window));
}

/* The app restarts: a new window on the same settings and VM folder. It opens on the person's
 * tasks when there are any (the home screen), else on the first run or a new task's folder. */
static void
restart_window (Fixture *f)
{
        gtk_window_destroy (GTK_WINDOW (f->window));
        ui_test_spin (100);
        open_window (f);
        g_assert_true (ui_test_wait (tasks_loaded, f->window, 5000));
        ui_test_spin (50);
        g_assert_cmpstr (corral_window_get_page (f->window), ==,
                         corral_tasks_page_get_n_tasks (corral_window_get_tasks_page (f->window))
                                 ? "tasks"
                                 : "first-run");
}

static gboolean
content_overflows (gpointer adj)
{
        return gtk_adjustment_get_upper (adj) > gtk_adjustment_get_page_size (adj) &&
               gtk_adjustment_get_value (adj) >=
                       gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj) - 1.0;
}

static void
test_reopen (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        g_autoptr (CorralLlmConversation) conv = earlier_conversation ();
        /* Listed by its folder's name: the task has a record. */
        void *row_args[] = { NULL, (void *) "Documents", NULL };
        CorralChatView *chat;
        GtkWidget *win, *card;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        g_assert_true (ui_test_wait (record_written, (gpointer) "task-test", 5000));
        /* The app restarts: a new window on the same settings and VM folder. */
        restart_window (f);
        win = GTK_WIDGET (f->window);

        /* The home screen lists it. */
        g_assert_cmpstr (corral_window_get_page (f->window), ==, "tasks");
        row_args[0] = f->window;
        g_assert_true (ui_test_wait (ui_test_row_listed, row_args, 5000));
        g_assert_true (gtk_list_box_row_get_activatable (row_args[2]));
        adw_action_row_activate (row_args[2]);
        wait_page (f, "starting");
        g_assert_cmpstr (f->launcher->resumed, ==, "task-test");
        test_launcher_finish (f->launcher);
        wait_page (f, "session");
        g_assert_cmpstr (
                corral_session_view_get_vm_name (corral_window_get_session_view (f->window)), ==,
                "task-test");

        /* What corral_assistant_source_restore() shows for a resumed session. */
        chat = corral_session_view_get_chat (corral_window_get_session_view (f->window));
        corral_assistant_source_replay (conv, chat);
        ui_test_spin (300);
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, "List the reports in this folder"));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, "Let me look."));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                        "There is one report: report-old.docx."));
        g_assert_cmpuint (corral_chat_view_get_n_tool_cards (chat), ==, 2);
        /* The question's card says the person's answer, as it did when it was given. */
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_GROUP,
                                        "Asked to delete report-old.docx: You said no"));
        /* The assistant's Markdown is rendered, and a link asks before it opens. */
        corral_chat_view_add_restored_reply (chat, "Sorted into **food**, *work* and `travel`; see "
                                                   "[the guide](https://example.org/guide).");
        ui_test_spin (200);
        {
                GtkWidget *label =
                        ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                                      "Sorted into food, work and travel; see the guide.");
                gboolean handled = FALSE;
                GtkWidget *ask;

                g_assert_nonnull (label);
                g_signal_emit_by_name (label, "activate-link", "https://example.org/guide",
                                       &handled);
                g_assert_true (handled);
                ui_test_spin (200);
                ask = ui_test_find_message_dialog ("Open This Link?");
                g_assert_nonnull (ask);
                g_assert_nonnull (strstr (adw_message_dialog_get_body (ADW_MESSAGE_DIALOG (ask)),
                                          "https://example.org/guide"));
                ui_test_screenshot (ask, "23b-dialog-open-link");
                adw_message_dialog_response (ADW_MESSAGE_DIALOG (ask), "cancel");
                ui_test_spin (100);
        }
        /* A long conversation opens at its end, where it stopped. */
        for (int i = 0; i < 30; i++)
                corral_chat_view_add_restored_reply (chat, "An earlier reply, one of many.");
        ui_test_spin (300);
        {
                GtkWidget *any_card = ui_test_find_type (GTK_WIDGET (chat), CORRAL_TYPE_TOOL_CARD);
                GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (GTK_SCROLLED_WINDOW (
                        gtk_widget_get_ancestor (any_card, GTK_TYPE_SCROLLED_WINDOW)));

                /* Replies are rendered in an idle: slow builds (ASan) need longer than a spin. */
                g_assert_true (ui_test_wait (content_overflows, adj, 20000));
                ui_test_spin (100);
                g_assert_cmpfloat (gtk_adjustment_get_upper (adj), >,
                                   gtk_adjustment_get_page_size (adj));
                g_assert_cmpfloat (gtk_adjustment_get_value (adj), >=,
                                   gtk_adjustment_get_upper (adj) -
                                           gtk_adjustment_get_page_size (adj) - 1.0);
        }
        card = ui_test_find_type (GTK_WIDGET (chat), CORRAL_TYPE_TOOL_CARD);
        g_assert_nonnull (card);
        g_assert_true (corral_tool_card_get_finished (CORRAL_TOOL_CARD (card)));
        g_assert_cmpstr (corral_tool_card_get_id (CORRAL_TOOL_CARD (card)), ==, "call-1");
        /* The restored card says what the live one said. */
        g_assert_nonnull (ui_test_find (card, GTK_ACCESSIBLE_ROLE_LABEL, "Ran a command"));
        {
                GtkWidget *details = ui_test_find_type (card, GTK_TYPE_EXPANDER);

                g_assert_nonnull (details);
                g_assert_false (gtk_expander_get_expanded (GTK_EXPANDER (details)));
                gtk_expander_set_expanded (GTK_EXPANDER (details), TRUE);
                ui_test_spin (100);
                g_assert_nonnull (ui_test_find (card, GTK_ACCESSIBLE_ROLE_LABEL, "Exit status 0"));
                g_assert_nonnull (
                        ui_test_find (card, GTK_ACCESSIBLE_ROLE_LABEL, "ls /workspace/Documents"));
                gtk_expander_set_expanded (GTK_EXPANDER (details), FALSE);
                ui_test_spin (100);
        }
        assert_plain_words (win);
        /* The window's title says which folder the reopened task works on. */
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL, f->folder));
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "23-reopened");
}

static gboolean
dialog_open (gpointer page)
{
        return corral_tasks_page_get_dialog (page) != NULL;
}

static gboolean
n_tasks_is (gpointer data)
{
        void **args = data;
        CorralTasksPage *page = args[0];

        return corral_tasks_page_get_loaded (page) &&
               corral_tasks_page_get_n_tasks (page) == GPOINTER_TO_UINT (args[1]);
}

/* The home screen: the person's tasks, named after their first request, renamed and removed
 * from there (removing asks first and says what stays); Back from a new task's folder. */
static void
test_tasks_home (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        g_autoptr (CorralTaskRecord) record = NULL;
        void *row_args[] = { NULL, (void *) "Sort my notes into folders by topic", NULL };
        void *count[] = { NULL, GUINT_TO_POINTER (0) };
        CorralTasksPage *page;
        GtkWidget *dialog, *entry, *back;

        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        g_assert_true (ui_test_wait (record_written, (gpointer) "task-test", 5000));
        /* The first request names the task (what the assistant source does on send). */
        g_assert_true (corral_task_record_set_title (
                "task-test", "Sort my notes\ninto folders by topic", TRUE, NULL));
        restart_window (f);
        page = corral_window_get_tasks_page (f->window);
        g_assert_cmpstr (corral_window_get_page (f->window), ==, "tasks");
        row_args[0] = f->window;
        g_assert_true (ui_test_wait (ui_test_row_listed, row_args, 5000));
        /* Its folder, when and how, under the person's words. */
        g_assert_nonnull (strstr (adw_action_row_get_subtitle (row_args[2]), "Documents"));
        g_assert_nonnull (strstr (adw_action_row_get_subtitle (row_args[2]), "Paused"));
        ui_test_assert_buttons_named (GTK_WIDGET (f->window));
        ui_test_screenshot (GTK_WIDGET (f->window), "27b-tasks-home");

        /* New Task, then Back to the tasks. */
        click (GTK_WIDGET (f->window), "New Task");
        wait_page (f, "first-run");
        g_assert_true (ui_test_wait (tasks_loaded, f->window, 5000));
        ui_test_spin (100);
        back = ui_test_find (GTK_WIDGET (f->window), GTK_ACCESSIBLE_ROLE_BUTTON,
                             "Back to Your Tasks");
        g_assert_nonnull (back);
        g_signal_emit_by_name (back, "clicked");
        wait_page (f, "tasks");

        /* Rename: the person's name replaces the request's. */
        corral_tasks_page_ask_rename (page, "task-test");
        g_assert_true (ui_test_wait (dialog_open, page, 5000));
        dialog = corral_tasks_page_get_dialog (page);
        entry = adw_message_dialog_get_extra_child (ADW_MESSAGE_DIALOG (dialog));
        g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (entry)), ==,
                         "Sort my notes into folders by topic");
        ui_test_assert_buttons_named (dialog);
        gtk_editable_set_text (GTK_EDITABLE (entry), "Notes, sorted");
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (dialog), "rename");
        row_args[1] = (void *) "Notes, sorted";
        g_assert_true (ui_test_wait (ui_test_row_listed, row_args, 5000));
        record = corral_task_record_load ("task-test", NULL);
        g_assert_cmpstr (record->title, ==, "Notes, sorted");

        /* Remove: asked first, with what goes and what stays. */
        corral_tasks_page_ask_remove (page, "task-test");
        g_assert_true (ui_test_wait (dialog_open, page, 5000));
        dialog = corral_tasks_page_get_dialog (page);
        g_assert_cmpstr (adw_message_dialog_get_heading (ADW_MESSAGE_DIALOG (dialog)), ==,
                         "Remove \u201cNotes, sorted\u201d?");
        g_assert_nonnull (strstr (adw_message_dialog_get_body (ADW_MESSAGE_DIALOG (dialog)),
                                  "stay as they are"));
        g_assert_nonnull (
                strstr (adw_message_dialog_get_body (ADW_MESSAGE_DIALOG (dialog)), f->folder));
        ui_test_screenshot (dialog, "27c-dialog-remove-task");
        /* Cancel removes nothing. */
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
        ui_test_spin (200);
        g_assert_null (f->launcher->removed);
        g_assert_true (record_written ((gpointer) "task-test"));
        corral_tasks_page_ask_remove (page, "task-test");
        g_assert_true (ui_test_wait (dialog_open, page, 5000));
        adw_message_dialog_response (ADW_MESSAGE_DIALOG (corral_tasks_page_get_dialog (page)),
                                     "remove");
        count[0] = page;
        g_assert_true (ui_test_wait (n_tasks_is, count, 5000));
        g_assert_cmpstr (f->launcher->removed, ==, "task-test");
        g_assert_false (record_written ((gpointer) "task-test"));
        /* The person's files are as they were. */
        g_assert_true (g_file_test (f->folder, G_FILE_TEST_IS_DIR));
        /* No tasks left: a new one's folder. */
        wait_page (f, "first-run");
}

/* args: { root, text }: a visible label says text. */
static gboolean
status_titled (gpointer data)
{
        void **args = data;

        return ui_test_find (args[0], GTK_ACCESSIBLE_ROLE_LABEL, args[1]) != NULL;
}

/* The provider could not be reached during a task: the chat says so with Try Again, which goes
 * on without a restart (and without the person typing the request again). */
static void
test_retry (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = start_session (f);
        GtkWidget *win = GTK_WIDGET (f->window);
        CorralChatView *chat =
                corral_session_view_get_chat (corral_window_get_session_view (f->window));
        void *back[] = { win, (void *) "Back again: the provider answers." };

        corral_demo_source_fail_next (demo);
        corral_chat_view_send (chat, "Sort my notes");
        ui_test_spin (200);
        g_assert_nonnull (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_LABEL,
                              "Could not reach the model's provider: the network is down."));
        ui_test_screenshot (win, "10b-chat-retry");
        click (win, "Try Again");
        g_assert_true (ui_test_wait (status_titled, back, 5000));
        g_assert_cmpuint (corral_demo_source_get_retries (demo), ==, 1);
        /* Used once: the button does not go on twice. */
        g_assert_false (gtk_widget_is_sensitive (
                ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Try Again")));
}

/* No model key: the chat says so in the person's words, offers to add one (Preferences, on the
 * Credentials page) and to try again, which connects without a restart. */
static void
test_no_key (Fixture *f, gconstpointer data)
{
        CorralFirstRun *fr = corral_window_get_first_run (f->window);
        GtkWidget *win = GTK_WIDGET (f->window);
        void *needs_key[] = { win, (void *) "The Assistant Needs a Model Key" };
        GtkWidget *prefs;

        g_unsetenv ("ANTHROPIC_API_KEY");
        g_unsetenv ("OPENAI_API_KEY");
        /* An earlier test may have stored one (the first run does). */
        corral_secret_store_remove_sync ("anthropic", NULL, NULL);
        f->launcher->with_client = TRUE;
        corral_first_run_show_step (fr, "folder");
        corral_first_run_set_folder (fr, f->folder);
        click (win, "Start");
        wait_page (f, "starting");
        test_launcher_finish (f->launcher);
        wait_page (f, "session");
        g_assert_true (ui_test_wait (status_titled, needs_key, 10000));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Add a Key…"));
        g_assert_nonnull (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Try Again"));
        ui_test_spin (600); /* the page's crossfade */
        assert_plain_words (win);
        ui_test_assert_buttons_named (win);
        ui_test_screenshot (win, "06b-session-no-key");
        click (win, "Add a Key…");
        ui_test_spin (300);
        prefs = ui_test_find_preferences (GTK_WINDOW (win));
        g_assert_nonnull (prefs);
        g_assert_cmpstr (
                adw_preferences_window_get_visible_page_name (ADW_PREFERENCES_WINDOW (prefs)), ==,
                "credentials");
        gtk_window_destroy (GTK_WINDOW (prefs));
        /* Try Again connects again: still no key here, so the same words come back. */
        click (win, "Try Again");
        g_assert_null (ui_test_find (win, GTK_ACCESSIBLE_ROLE_BUTTON, "Try Again"));
        g_assert_true (ui_test_wait (status_titled, needs_key, 10000));
}

/* The workspace was removed (corralctl vm rm): the task is still listed, from its record, and
 * opening it makes the workspace again with the same folder and mode. */
static void
test_reopen_removed (Fixture *f, gconstpointer data)
{
        g_autoptr (CorralDemoSource) demo = NULL;
        g_autoptr (CorralTaskRecord) record = NULL;
        g_autoptr (GPtrArray) shares = NULL;
        g_autofree char *shares_file = g_build_filename (f->vm_dir, "shares.json", NULL);
        g_autofree char *damaged = NULL;
        g_autofree char *dir = corral_task_record_dir ();
        void *row_args[] = { NULL, (void *) "Documents", NULL };
        GtkWidget *row;

        /* The person lifted the second wall for new tasks: this one keeps it lifted. */
        g_settings_set_boolean (f->settings, "unconfined-commands", TRUE);
        demo = start_session (f);
        g_assert_true (CORRAL_IS_DEMO_SOURCE (demo));
        g_assert_true (f->launcher->unconfined_commands);
        g_assert_true (ui_test_wait (record_written, (gpointer) "task-test", 5000));
        record = corral_task_record_load ("task-test", NULL);
        g_assert_cmpstr (record->config->folder, ==, f->folder);
        g_assert_cmpint (record->config->mode, ==, FS_MODE_RW_NODELETE);
        g_assert_cmpstr (record->config->image, ==, "minimal");
        g_assert_true (record->config->unconfined_commands);
        /* Later tasks go back to the default; the earlier task's own setting stands. */
        g_settings_set_boolean (f->settings, "unconfined-commands", FALSE);
        /* A damaged record beside it is skipped, never fatal. */
        damaged = g_build_filename (dir, "task-20240101-000000.json", NULL);
        g_assert_true (g_file_set_contents (damaged, "{\"version\":1,\"vm\":\"x", -1, NULL));

        restart_window (f);
        g_assert_cmpint (g_unlink (shares_file), ==, 0);
        corral_window_show_tasks (f->window);
        row_args[0] = f->window;
        g_assert_true (ui_test_wait (ui_test_row_listed, row_args, 5000));
        ui_test_spin (300);
        g_assert_true (ui_test_wait (ui_test_row_listed, row_args, 5000));
        row = row_args[2];
        g_assert_nonnull (
                strstr (adw_action_row_get_subtitle (ADW_ACTION_ROW (row)), "Workspace removed"));
        g_assert_cmpstr (gtk_widget_get_tooltip_text (row), ==, f->folder);
        /* Neither the damaged record nor a workspace made elsewhere (no record) is a task. */
        g_assert_null (ui_test_find (GTK_WIDGET (f->window), GTK_ACCESSIBLE_ROLE_LIST_ITEM,
                                     "task-20240101-000000"));
        g_assert_null (ui_test_find (GTK_WIDGET (f->window), GTK_ACCESSIBLE_ROLE_LIST_ITEM,
                                     "task-20250101-090000"));
        g_assert_cmpuint (corral_tasks_page_get_n_tasks (corral_window_get_tasks_page (f->window)),
                          ==, 1);
        ui_test_assert_buttons_named (GTK_WIDGET (f->window));
        ui_test_screenshot (GTK_WIDGET (f->window), "27-tasks");
        adw_action_row_activate (ADW_ACTION_ROW (row));
        wait_page (f, "starting");
        g_assert_cmpstr (f->launcher->resumed, ==, "task-test");
        test_launcher_finish (f->launcher);
        wait_page (f, "session");
        g_assert_true (f->launcher->recreated);
        g_assert_true (f->launcher->unconfined_commands);
        /* The same folder, shared the same way, in the new workspace. */
        shares = corral_shares_list (f->vm_dir, NULL);
        g_assert_nonnull (shares);
        g_assert_cmpuint (shares->len, ==, 1);
        g_assert_cmpstr (((CorralShare *) shares->pdata[0])->path, ==, f->folder);
        g_assert_cmpint (((CorralShare *) shares->pdata[0])->mode, ==, FS_MODE_RW_NODELETE);
        g_assert_nonnull (
                ui_test_find (GTK_WIDGET (f->window), GTK_ACCESSIBLE_ROLE_LABEL, f->folder));
}

/* The Keyboard Shortcuts window builds, and lists the terminal's keys. */
static void
test_help_overlay (void)
{
        g_autoptr (GtkBuilder) builder = gtk_builder_new ();
        g_autoptr (GError) error = NULL;
        GtkWidget *overlay;

        g_assert_true (gtk_builder_add_from_resource (
                builder, "/org/corral/Corral/gtk/help-overlay.ui", &error));
        g_assert_no_error (error);
        overlay = GTK_WIDGET (gtk_builder_get_object (builder, "help_overlay"));
        g_assert_true (GTK_IS_SHORTCUTS_WINDOW (overlay));
        gtk_window_present (GTK_WINDOW (overlay));
        ui_test_spin (300);
        g_assert_nonnull (ui_test_find (overlay, GTK_ACCESSIBLE_ROLE_LABEL, "Terminal"));
        g_assert_nonnull (ui_test_find (overlay, GTK_ACCESSIBLE_ROLE_LABEL, "Paste"));
        ui_test_screenshot (overlay, "28-shortcuts");
        gtk_window_destroy (GTK_WINDOW (overlay));
}

static void
test_task_record (void)
{
        CorralTaskConfig config = { .folder = (char *) "/home/ada/My \"Reports\"",
                                    .mode = FS_MODE_RW,
                                    .image = (char *) "standard",
                                    .memory_mib = 2048,
                                    .vcpus = 2,
                                    .network_preset = (char *) "allowlist",
                                    .network_allow =
                                            (char *[]){ "pypi.org", "*.github.com", NULL } };
        CorralTaskRecord in = { .vm_name = (char *) "task-20261201-101500",
                                .config = &config,
                                .session_id = (char *) "abc-123",
                                .created = 1764584100 };
        g_autofree char *json = corral_task_record_to_json (&in);
        g_autoptr (CorralTaskRecord) out = corral_task_record_from_json (json, strlen (json), NULL);
        /* Each damaged field is named; nothing half-parsed comes back. */
        static const char *const bad[] = {
                "",
                "[]",
                "{\"version\":2}",
                "{\"version\":1,\"vm\":\"../x\",\"created\":1,\"folder\":\"/a\",\"mode\":"
                "\"rw\",\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"all\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":1e9,"
                "\"vcpus\":1}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1.5}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1,\"session\":\"../../etc\"}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1,\"network_allow\":[3]}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1,\"unconfined_commands\":\"true\"}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1,\"unconfined_commands\":1}",
                "{\"version\":1,\"vm\":\"t\",\"created\":1,\"folder\":\"/a\",\"mode\":\"rw\","
                "\"image\":\"minimal\",\"network_preset\":\"none\",\"memory_mib\":512,"
                "\"vcpus\":1,\"unconfined_commands\":null}",
        };

        g_assert_nonnull (out);
        g_assert_cmpstr (out->vm_name, ==, in.vm_name);
        g_assert_cmpstr (out->session_id, ==, "abc-123");
        g_assert_cmpint (out->created, ==, in.created);
        g_assert_cmpstr (out->config->folder, ==, config.folder);
        g_assert_cmpint (out->config->mode, ==, FS_MODE_RW);
        g_assert_cmpstr (out->config->image, ==, "standard");
        g_assert_cmpuint (out->config->memory_mib, ==, 2048);
        g_assert_cmpuint (out->config->vcpus, ==, 2);
        g_assert_cmpstr (out->config->network_preset, ==, "allowlist");
        g_assert_true (g_strv_equal ((const char *const *) out->config->network_allow,
                                     (const char *const *) config.network_allow));
        /* Off: not written, and a record without it (an older one too) reads as off. */
        g_assert_false (out->config->unconfined_commands);
        g_assert_null (strstr (json, "unconfined_commands"));
        /* On: written, and read back. */
        config.unconfined_commands = TRUE;
        {
                g_autofree char *on = corral_task_record_to_json (&in);
                g_autoptr (CorralTaskRecord) back =
                        corral_task_record_from_json (on, strlen (on), NULL);

                g_assert_nonnull (strstr (on, "\"unconfined_commands\""));
                g_assert_nonnull (back);
                g_assert_true (back->config->unconfined_commands);
        }
        {
                static const char off[] =
                        "{\"version\":1,\"vm\":\"task-1\",\"created\":1,\"folder\":\"/a\","
                        "\"mode\":\"rw\",\"image\":\"minimal\",\"network_preset\":\"none\","
                        "\"memory_mib\":512,\"vcpus\":1,\"unconfined_commands\":false}";
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralTaskRecord) back =
                        corral_task_record_from_json (off, strlen (off), &error);

                g_assert_no_error (error);
                g_assert_false (back->config->unconfined_commands);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autoptr (GError) error = NULL;
                g_autoptr (CorralTaskRecord) r =
                        corral_task_record_from_json (bad[i], strlen (bad[i]), &error);
                g_assert_null (r);
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
                g_assert_true (g_str_has_prefix (error->message, "The task's record is damaged"));
        }
        {
                g_autoptr (GError) error = NULL;
                g_assert_null (corral_task_record_load ("task-19990101-000000", &error));
                g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
        }
}

static void
test_activity (void)
{
        gboolean problem;
        g_autofree char *time = NULL;
        g_autofree char *a = corral_activity_describe (
                "{\"time\":\"2025-01-01T10:00:00Z\",\"source\":\"files\",\"share\":\"d\","
                "\"op\":\"unlink\",\"path\":\"x.txt\",\"result\":\"refused\",\"rule\":\"no-"
                "delete\","
                "\"message\":\"Blocked by the sandbox: x.txt may not be deleted\"}",
                &problem, &time);
        g_autofree char *b = NULL;
        g_autofree char *c = NULL;

        g_assert_cmpstr (a, ==, "Blocked by the sandbox: x.txt may not be deleted");
        g_assert_true (problem);
        g_assert_cmpstr (time, ==, "2025-01-01T10:00:00Z");
        b = corral_activity_describe ("{\"host\":\"pypi.org\",\"decision\":\"allowed\"}", &problem,
                                      NULL);
        g_assert_cmpstr (b, ==, "Connected to pypi.org");
        g_assert_false (problem);
        c = corral_activity_describe ("{not json", &problem, NULL);
        g_assert_null (c);
        /* The organisation's policy the file server runs under (SECURITY.md M5); none: nothing. */
        {
                g_autofree char *p = corral_activity_describe (
                        "{\"source\":\"policy\",\"digest\":\"ab\",\"sources\":"
                        "[\"/etc/corral/managed.json\",\"/etc/corral/managed.d/10-x.json\"]}",
                        &problem, NULL);

                g_assert_cmpstr (
                        p, ==,
                        "Your organisation\u2019s policy applies (/etc/corral/managed.json, "
                        "/etc/corral/managed.d/10-x.json)");
                g_assert_false (problem);
                g_assert_null (corral_activity_describe (
                        "{\"source\":\"policy\",\"digest\":\"ab\",\"sources\":[]}", &problem,
                        NULL));
        }
        g_assert_null (corral_activity_describe ("[1]", &problem, NULL));
        /* A folded line stands for repeats of the refusal before it (corral-audit-log.h). */
        {
                g_autofree char *d = corral_activity_describe (
                        "{\"source\":\"files\",\"op\":\"unlink\",\"path\":\"x.txt\","
                        "\"result\":\"refused\",\"message\":\"Blocked\",\"count\":5000}",
                        &problem, NULL);
                g_autofree char *e = corral_activity_describe (
                        "{\"host\":\"pypi.org\",\"decision\":\"denied\",\"count\":2}", &problem,
                        NULL);

                g_assert_cmpstr (d, ==, "Refused 5000 more times: unlink of x.txt");
                g_assert_cmpstr (e, ==, "Blocked 2 more connections to pypi.org");
                g_assert_true (problem);
        }
}

/* Under Xvfb there is no window manager: when a dialog takes the focus, X sends the entry no
 * focus-out, and GTK warns about that. Everything else stays fatal. */
static gboolean
ignore_no_wm_warnings (const char *domain, GLogLevelFlags level, const char *message, gpointer data)
{
        return !(g_strcmp0 (domain, "Gtk") == 0 && strstr (message, "did not receive a focus-out"));
}

int
main (int argc, char **argv)
{
        g_autofree char *state_dir = NULL;
        int ret;

        if (g_getenv ("CORRAL_VALGRIND")) {
                g_print ("1..0 # SKIP GTK under valgrind: minutes per window and GTK's own "
                         "caches reported as leaks; the asan setup covers this suite\n");
                return 0;
        }
        if (!egress_test_keyring_dir ())
                return egress_test_keyring_reexec (argv);
        /* 77: no display (the TAP skip line is printed), which TAP reports as a skip with 0. */
        if ((ret = ui_test_setup_display ()) != 0)
                return ret == 77 ? 0 : ret;
        /* Task records and transcripts go to a folder of this run, never the person's. */
        state_dir = g_dir_make_tmp ("corral-ui-state-XXXXXX", NULL);
        g_assert_nonnull (state_dir);
        g_setenv ("XDG_STATE_HOME", state_dir, TRUE);
        gtk_test_init (&argc, &argv, NULL);
        g_test_log_set_fatal_handler (ignore_no_wm_warnings, NULL);
        g_object_set (gtk_settings_get_default (), "gtk-cursor-blink", FALSE, NULL);
        adw_init ();
        /* Linked in, so registered by its constructor. */
        g_assert_nonnull (corral_get_resource ());
        {
                g_autoptr (GtkCssProvider) css = gtk_css_provider_new ();
                gtk_css_provider_load_from_resource (css, "/org/corral/Corral/style.css");
                gtk_style_context_add_provider_for_display (
                        gdk_display_get_default (), GTK_STYLE_PROVIDER (css),
                        GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
        }
        gtk_icon_theme_add_resource_path (
                gtk_icon_theme_get_for_display (gdk_display_get_default ()),
                "/org/corral/Corral/icons");

#define ADD(path, fn) g_test_add ("/ui/" path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("first-run", test_first_run);
        ADD ("start-error", test_start_error);
        ADD ("chat", test_chat);
        ADD ("approval-shown", test_approval_shown);
        ADD ("changes", test_changes);
        ADD ("terminal", test_terminal);
        ADD ("stop", test_stop);
        ADD ("shares", test_shares);
        ADD ("preferences", test_preferences);
        ADD ("locked", test_locked);
        ADD ("policy-page", test_policy_page);
        ADD ("policy-banner", test_policy_banner);
        ADD ("policy-folder-modes", test_policy_folder_modes);
        ADD ("dark", test_dark);
        ADD ("large-text", test_large_text);
        ADD ("close-pauses", test_close_pauses);
        ADD ("close-now", test_close_now);
        ADD ("size-kept", test_size_kept);
        ADD ("new-task-pauses", test_new_task_pauses);
        ADD ("reopen", test_reopen);
        ADD ("reopen-removed", test_reopen_removed);
        ADD ("tasks-home", test_tasks_home);
        ADD ("no-key", test_no_key);
        ADD ("retry", test_retry);
#undef ADD
        g_test_add_func ("/ui/activity-words", test_activity);
        g_test_add_func ("/ui/task-record", test_task_record);
        g_test_add_func ("/ui/help-overlay", test_help_overlay);
        g_test_add_func ("/ui/tool-card-states", test_tool_card_states);
        ret = g_test_run ();
        rm_rf (state_dir);
        ui_test_teardown_display ();
        return ret;
}
