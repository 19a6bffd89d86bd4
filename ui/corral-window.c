/* corral-window.c — the main window.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-window.h"

#include "corral-assistant-source.h"

#include <glib/gi18n.h>
#include <stdio.h>

#include "corral-preferences.h"
#include "corral-shares.h"
#include "corral-task-record.h"
#include "corral-task-start.h"
#include "corral-tasks-page.h"
#include "corral-ui-util.h"

struct _CorralWindow {
        AdwApplicationWindow parent_instance;

        CorralLauncher *launcher;
        GSettings *settings;
        GCancellable *cancellable; /* the start in progress */
        GCancellable *assistant_cancellable; /* the assistant being connected to the task */
        CorralLaunchResult
                *assistant_for; /* the workspace the assistant connects to, for Try Again */
        gboolean closing_confirmed;

        GtkWidget *title;
        GtkWidget *panel_button;
        GtkWidget *back_button; /* in the header: from a new task's folder back to the task */
        GtkWidget *toasts;
        GtkWidget *stack;
        GtkWidget *tasks_page;
        GtkWidget *first_run;
        GtkWidget *starting;
        GtkWidget *session;
        GtkWidget *close_dialog;
        gboolean tasks_shown_once; /* the home screen was offered when the window opened */
        /* Of the task being started or running; for a reopened one, from its task record
         * (NULL without one), and what its workspace is made again with if it was removed. */
        CorralTaskConfig *config;
        char *folder; /* the shared folder, for the title */
        char *reopen_vm; /* the earlier task being reopened or running again, or NULL */
        char *paused_vm; /* the task paused when the last one started, or NULL */
};

G_DEFINE_FINAL_TYPE (CorralWindow, corral_window, ADW_TYPE_APPLICATION_WINDOW)

static void prepare_next_task (CorralWindow *self);

static void
show_page (CorralWindow *self, const char *name)
{
        gboolean session = g_str_equal (name, "session");
        const char *shown = corral_session_view_get_vm_name (CORRAL_SESSION_VIEW (self->session));
        /* Choosing a new task's folder while one is open (not paused for a start that then
         * failed): Back returns to it. */
        gboolean can_return =
                g_str_equal (name, "first-run") && shown && g_strcmp0 (shown, self->paused_vm) != 0;
        /* Else, from a new task's folder back to the list of tasks. */
        const char *step = corral_first_run_get_step (CORRAL_FIRST_RUN (self->first_run));
        gboolean can_list =
                g_str_equal (name, "first-run") && !can_return && g_strcmp0 (step, "folder") == 0 &&
                corral_tasks_page_get_n_tasks (CORRAL_TASKS_PAGE (self->tasks_page)) > 0;
        /* Else, in the first run, to the step before. */
        gboolean can_step_back = g_str_equal (name, "first-run") && !can_return && !can_list &&
                                 (g_strcmp0 (step, "provider") == 0 ||
                                  (g_strcmp0 (step, "folder") == 0 &&
                                   !g_settings_get_boolean (self->settings, "first-run-done")));
        const char *back_words = can_return ? _ ("Back to the Task")
                                 : can_list ? _ ("Back to Your Tasks")
                                            : _ ("Back");

        gtk_stack_set_visible_child_name (GTK_STACK (self->stack), name);
        gtk_widget_set_visible (self->panel_button, session);
        gtk_widget_set_visible (self->back_button, can_return || can_list || can_step_back);
        gtk_widget_set_tooltip_text (self->back_button, back_words);
        gtk_accessible_update_property (GTK_ACCESSIBLE (self->back_button),
                                        GTK_ACCESSIBLE_PROPERTY_LABEL, back_words, -1);
        if (g_str_equal (name, "tasks"))
                corral_tasks_page_set_current (CORRAL_TASKS_PAGE (self->tasks_page), shown);
        /* Once the tasks are listed: the window opens on the folder page, then turns to the
         * list when there are tasks, and reopening one needs no new workspace. */
        if (g_str_equal (name, "first-run") && self->tasks_shown_once)
                prepare_next_task (self);
        adw_window_title_set_subtitle (ADW_WINDOW_TITLE (self->title),
                                       session ? self->folder : NULL);
}

const char *
corral_window_get_page (CorralWindow *self)
{
        g_return_val_if_fail (CORRAL_IS_WINDOW (self), NULL);
        return gtk_stack_get_visible_child_name (GTK_STACK (self->stack));
}

/* Starting ------------------------------------------------------------------------------------- */

static void
on_progress (CorralLaunchStage stage, double fraction, const char *detail, gpointer user_data)
{
        corral_starting_page_set_progress (CORRAL_STARTING_PAGE (user_data), stage, fraction,
                                           detail);
}

static void
on_assistant_ready (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralWindow) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralAssistantSource) agent = corral_assistant_source_new_finish (res, &error);

        /* Closed, or another task started, while the assistant was connecting: it is not this
         * window's any more. */
        if (!self->assistant_cancellable ||
            g_cancellable_is_cancelled (self->assistant_cancellable))
                return;
        if (!agent) {
                CorralChatView *chat =
                        corral_session_view_get_chat (CORRAL_SESSION_VIEW (self->session));

                if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                        return;
                g_message ("The assistant could not connect: %s", error->message);
                /* Said in place, with what to do: the person's words, not the provider layer's
                 * (which names variables and commands for corralctl). */
                if (g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_NO_API_KEY) ||
                    g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH))
                        corral_chat_view_set_disconnected (
                                chat, _ ("The Assistant Needs a Model Key"),
                                g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH)
                                        ? _ ("The model’s provider did not accept the key. Add "
                                             "the right one in Preferences, then try again.")
                                        : _ ("Corral talks to the model with your key from its "
                                             "provider (Anthropic, OpenAI or a compatible "
                                             "server). Add it in Preferences; it stays in this "
                                             "computer’s keychain. Then try again."),
                                TRUE, TRUE);
                else
                        corral_chat_view_set_disconnected (chat,
                                                           _ ("The Assistant Could Not Be Reached"),
                                                           error->message, FALSE, TRUE);
                return;
        }
        corral_window_set_chat_source (self, CORRAL_CHAT_SOURCE (agent));
        /* A task with a screen: the assistant uses the one the Screen panel shows. */
        corral_assistant_source_set_computer (
                agent, corral_screen_panel_get_computer (corral_session_view_get_screen (
                               CORRAL_SESSION_VIEW (self->session))));
        /* A reopened task: its conversation so far, or why it is missing. */
        corral_assistant_source_restore (
                agent, corral_session_view_get_chat (CORRAL_SESSION_VIEW (self->session)));
}

/* The assistant loop for the workspace that just started (when the launcher connected its agent). */
static void
connect_assistant (CorralWindow *self, const CorralLaunchResult *result)
{
        g_autofree char *provider = g_settings_get_string (self->settings, "provider");
        g_autofree char *model = g_settings_get_string (self->settings, "model");
        g_autofree char *base_url = g_settings_get_string (self->settings, "base-url");

        if (!result->agent_client || !result->vm_dir)
                return;
        if (result != self->assistant_for) {
                g_clear_pointer (&self->assistant_for, corral_launch_result_free);
                self->assistant_for = g_new0 (CorralLaunchResult, 1);
                self->assistant_for->vm_name = g_strdup (result->vm_name);
                self->assistant_for->vm_dir = g_strdup (result->vm_dir);
                self->assistant_for->agent_client = g_object_ref (result->agent_client);
        }
        g_cancellable_cancel (self->assistant_cancellable);
        g_clear_object (&self->assistant_cancellable);
        self->assistant_cancellable = g_cancellable_new ();
        corral_chat_view_set_disconnected (
                corral_session_view_get_chat (CORRAL_SESSION_VIEW (self->session)),
                _ ("Connecting to the Assistant…"), NULL, FALSE, FALSE);
        /* Same arguments: a reopened task resumes the session recorded in its VM folder. */
        (self->reopen_vm ? corral_assistant_source_resume_async
                         : corral_assistant_source_new_async) (
                g_str_equal (provider, "openai") ? CORRAL_LLM_PROVIDER_OPENAI
                                                 : CORRAL_LLM_PROVIDER_ANTHROPIC,
                model, base_url, CORRAL_AGENT_CLIENT (result->agent_client), result->vm_name,
                result->vm_dir, self->config && self->config->unconfined_commands,
                self->assistant_cancellable, on_assistant_ready, g_object_ref (self));
}

/* Try Again on the chat: the same workspace, the key and provider as they are now. */
static void
on_retry_requested (CorralWindow *self)
{
        if (self->assistant_for)
                connect_assistant (self, self->assistant_for);
}

static void
on_key_requested (CorralWindow *self)
{
        GtkWindow *prefs = corral_window_show_preferences (self);

        adw_preferences_window_set_visible_page_name (ADW_PREFERENCES_WINDOW (prefs),
                                                      "credentials");
}

static void
on_started (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralWindow) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLaunchResult) result =
                corral_launcher_start_finish (CORRAL_LAUNCHER (source), res, &error);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        g_clear_object (&self->cancellable);
        if (!result) {
                corral_starting_page_show_error (CORRAL_STARTING_PAGE (self->starting), error);
                return;
        }
        corral_session_view_set_workspace (CORRAL_SESSION_VIEW (self->session), result->vm_name,
                                           result->vm_dir);
        /* NULL too: the previous task's shell ends. */
        corral_session_view_set_agent_client (
                CORRAL_SESSION_VIEW (self->session),
                result->agent_client ? CORRAL_AGENT_CLIENT (result->agent_client) : NULL);
        show_page (self, "session");
        /* The task runs; only finding it again later depends on its record. */
        if (result->record_error)
                adw_toast_overlay_add_toast (
                        ADW_TOAST_OVERLAY (self->toasts),
                        adw_toast_new (_ ("This task will not be listed under Your Tasks")));
        connect_assistant (self, result);
}

static void on_reopened (GObject *source, GAsyncResult *res, gpointer user_data);

static void
on_previous_paused (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        if (!corral_launcher_suspend_finish (CORRAL_LAUNCHER (source), res, &error))
                g_warning ("Could not pause the previous task's workspace: %s", error->message);
}

/* Another task starts: the one shown until now stops its assistant and its workspace pauses
 * (nothing is lost; Your Tasks reopens it), instead of running on until the app quits. */
static void
pause_previous_task (CorralWindow *self)
{
        CorralSessionView *session = CORRAL_SESSION_VIEW (self->session);
        const char *previous = corral_session_view_get_vm_name (session);

        /* Once: a retried start finds the same one shown. */
        if (!previous || g_strcmp0 (previous, self->reopen_vm) == 0 ||
            g_strcmp0 (previous, self->paused_vm) == 0)
                return;
        g_free (self->paused_vm);
        self->paused_vm = g_strdup (previous);
        corral_chat_view_stop (corral_session_view_get_chat (session));
        corral_launcher_suspend_async (self->launcher, previous, NULL, on_previous_paused, NULL);
}

static void
start_task (CorralWindow *self)
{
        pause_previous_task (self);
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        self->cancellable = g_cancellable_new ();
        corral_starting_page_reset (CORRAL_STARTING_PAGE (self->starting));
        show_page (self, "starting");
        if (self->reopen_vm)
                corral_launcher_resume_async (self->launcher, self->reopen_vm, self->config,
                                              on_progress, self->starting, self->cancellable,
                                              on_reopened, g_object_ref (self));
        else
                corral_launcher_start_async (self->launcher, self->config, on_progress,
                                             self->starting, self->cancellable, on_started,
                                             g_object_ref (self));
}

/* A new task as Preferences set it up, for folder (nullable while it is being chosen). */
static CorralTaskConfig *
config_from_settings (CorralWindow *self, const char *folder, FsMode mode)
{
        CorralTaskConfig *config = g_new0 (CorralTaskConfig, 1);

        config->folder = g_strdup (folder);
        config->mode = mode;
        g_autofree char *chosen = g_settings_get_string (self->settings, "image");

        config->image = corral_task_default_image (chosen, FALSE);
        config->memory_mib = g_settings_get_uint (self->settings, "memory-mib");
        config->kept_space_mib = g_settings_get_uint (self->settings, "kept-space-mib");
        config->vcpus = g_settings_get_uint (self->settings, "vcpus");
        config->network_preset = g_settings_get_string (self->settings, "network-preset");
        config->network_allow = g_settings_get_strv (self->settings, "network-allow");
        config->unconfined_commands =
                g_settings_get_boolean (self->settings, "unconfined-commands");
        return config;
}

/* The person is setting up a new task: its workspace gets ready meanwhile (a workspace image
 * checked or built, a VM booted), so that Start takes a second or two. */
static void
prepare_next_task (CorralWindow *self)
{
        g_autoptr (CorralTaskConfig) config = config_from_settings (self, NULL, FS_MODE_RO);

        corral_launcher_prepare (self->launcher, config);
}

static void
on_first_run_start (CorralWindow *self)
{
        CorralFirstRun *fr = CORRAL_FIRST_RUN (self->first_run);

        corral_task_config_free (self->config);
        self->config = config_from_settings (self, corral_first_run_get_folder (fr),
                                             corral_first_run_get_mode (fr));
        self->config->computer_use = corral_first_run_get_computer_use (fr);
        if (self->config->computer_use) {
                g_autofree char *chosen = g_settings_get_string (self->settings, "image");

                g_free (self->config->image);
                self->config->image = corral_task_default_image (chosen, TRUE);
        }
        g_free (self->folder);
        self->folder = g_strdup (self->config->folder);
        g_clear_pointer (&self->reopen_vm, g_free);
        start_task (self);
}

static void
on_back (CorralWindow *self)
{
        g_cancellable_cancel (self->cancellable);
        corral_first_run_show_step (CORRAL_FIRST_RUN (self->first_run), "folder");
        show_page (self, "first-run");
}

void
corral_window_new_task (CorralWindow *self)
{
        g_return_if_fail (CORRAL_IS_WINDOW (self));
        /* The task shown keeps running until another one starts (then it pauses). */
        corral_first_run_show_step (CORRAL_FIRST_RUN (self->first_run), "folder");
        show_page (self, "first-run");
        /* Back leads to the tasks, once listed again (on_tasks_loaded). */
        corral_tasks_page_refresh (CORRAL_TASKS_PAGE (self->tasks_page));
}

/* Closing -------------------------------------------------------------------------------------- */

static void release_prepared (CorralWindow *self);

static void
on_suspended (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralWindow) self = user_data;
        g_autoptr (GError) error = NULL;

        if (!corral_launcher_suspend_finish (CORRAL_LAUNCHER (source), res, &error))
                g_warning ("Could not pause the workspace: %s", error->message);
        /* Destroyed, not closed: close_request, which releases it, does not run. */
        release_prepared (self);
        gtk_window_destroy (GTK_WINDOW (self));
}

/* Pauses the running task, then the window goes (with the workspace made ready ahead). */
static void
pause_and_close (CorralWindow *self)
{
        CorralSessionView *session = CORRAL_SESSION_VIEW (self->session);

        self->closing_confirmed = TRUE;
        corral_chat_view_stop (corral_session_view_get_chat (session));
        corral_launcher_suspend_async (self->launcher, corral_session_view_get_vm_name (session),
                                       NULL, on_suspended, g_object_ref (self));
}

static void
on_close_response (AdwMessageDialog *dialog, const char *response, CorralWindow *self)
{
        self->close_dialog = NULL;
        if (!g_str_equal (response, "pause"))
                return;
        pause_and_close (self);
}

void
corral_window_close_now (CorralWindow *self)
{
        CorralSessionView *session;

        g_return_if_fail (CORRAL_IS_WINDOW (self));
        session = CORRAL_SESSION_VIEW (self->session);
        if (self->closing_confirmed)
                return; /* already going */
        /* No one to ask: a running task is paused, as the person's "Pause" would. */
        if (self->close_dialog) {
                GtkWidget *d = self->close_dialog;

                self->close_dialog = NULL;
                g_signal_handlers_disconnect_by_data (d, self);
                gtk_window_destroy (GTK_WINDOW (d));
        }
        if (corral_session_view_get_vm_name (session))
                pause_and_close (self);
        else
                gtk_window_close (GTK_WINDOW (self));
}

static void
on_released (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (GApplication) app = user_data; /* nullable */
        g_autoptr (GError) error = NULL;

        if (!corral_launcher_release_finish (CORRAL_LAUNCHER (source), res, &error))
                g_warning ("Could not remove the workspace made ready ahead: %s", error->message);
        if (app)
                g_application_release (app);
}

/* The workspace made ready for a next task goes with the app; the app stays until it is gone. */
static void
release_prepared (CorralWindow *self)
{
        GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));

        if (app)
                g_application_hold (G_APPLICATION (app));
        corral_launcher_release_async (self->launcher, on_released,
                                       app ? g_object_ref (app) : NULL);
}

static gboolean
corral_window_close_request (GtkWindow *window)
{
        CorralWindow *self = CORRAL_WINDOW (window);
        CorralSessionView *session = CORRAL_SESSION_VIEW (self->session);
        GtkWidget *d;
        int width, height;

        /* The window's size as set_default_size takes it back (GTK keeps it as the person
         * resizes, and the unmaximized one while maximized); the widget's allocation leaves
         * out the decorations' margins, and the window shrank by them at every launch. */
        gtk_window_get_default_size (window, &width, &height);
        if (width > 0 && height > 0) {
                g_settings_set_int (self->settings, "window-width", width);
                g_settings_set_int (self->settings, "window-height", height);
        }
        g_settings_set_boolean (self->settings, "window-maximized",
                                gtk_window_is_maximized (window));
        g_cancellable_cancel (self->cancellable);
        if (self->closing_confirmed || !corral_session_view_get_vm_name (session)) {
                release_prepared (self);
                return GTK_WINDOW_CLASS (corral_window_parent_class)->close_request (window);
        }
        if (self->close_dialog)
                return TRUE;
        d = adw_message_dialog_new (window, _ ("Pause This Task?"),
                                    _ ("Corral pauses the workspace so the task can continue "
                                       "later. Nothing is lost."));
        adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (d), "cancel", _ ("_Cancel"), "pause",
                                          _ ("_Pause and Close"), NULL);
        adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (d), "pause",
                                                    ADW_RESPONSE_SUGGESTED);
        adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (d), "pause");
        adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (d), "cancel");
        g_signal_connect (d, "response", G_CALLBACK (on_close_response), self);
        self->close_dialog = d;
        gtk_window_present (GTK_WINDOW (d));
        return TRUE;
}

GtkWidget *
corral_window_get_close_dialog (CorralWindow *self)
{
        return self->close_dialog;
}

/* Sessions ------------------------------------------------------------------------------------- */

static gpointer
load_shares (gpointer vm_dir, GCancellable *cancellable, GError **error)
{
        return corral_shares_list (vm_dir, error);
}

/* The reopened task's folder and mode, as its VM folder keeps them (for the title). */
static void
on_reopened_shares (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralWindow) self = user_data;
        g_autoptr (GPtrArray) shares = corral_run_in_thread_finish (res, NULL);
        CorralShare *share;

        if (!shares || shares->len == 0 || !self->reopen_vm)
                return;
        share = shares->pdata[0];
        g_free (self->folder);
        self->folder = g_strdup (share->path);
        if (g_str_equal (corral_window_get_page (self), "session"))
                show_page (self, "session");
}

static void
on_reopened (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralWindow) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralLaunchResult) result =
                corral_launcher_resume_finish (CORRAL_LAUNCHER (source), res, &error);
        CorralSessionView *session = CORRAL_SESSION_VIEW (self->session);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        g_clear_object (&self->cancellable);
        if (!result) {
                corral_starting_page_show_error (CORRAL_STARTING_PAGE (self->starting), error);
                return;
        }
        /* Another task's conversation and assistant do not belong to this one. */
        corral_window_set_chat_source (self, NULL);
        corral_chat_view_clear (corral_session_view_get_chat (session));
        corral_session_view_set_workspace (session, result->vm_name, result->vm_dir);
        corral_session_view_set_agent_client (
                session, result->agent_client ? CORRAL_AGENT_CLIENT (result->agent_client) : NULL);
        show_page (self, "session");
        /* Without a record: the folder from the VM folder, for the title. */
        if (!self->config && result->vm_dir)
                corral_run_in_thread (load_shares, g_strdup (result->vm_dir), g_free,
                                      (GDestroyNotify) g_ptr_array_unref, NULL, on_reopened_shares,
                                      g_object_ref (self));
        connect_assistant (self, result);
}

static gpointer
load_record (gpointer vm_name, GCancellable *cancellable, GError **error)
{
        return corral_task_record_load (vm_name, error);
}

static void
on_record_loaded (GObject *source, GAsyncResult *res, gpointer user_data)
{
        g_autoptr (CorralWindow) self = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralTaskRecord) record = corral_run_in_thread_finish (res, &error);

        if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
                return;
        /* Without a record the workspace is reopened if it still exists, never made again. */
        if (error && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND))
                g_message ("%s", error->message);
        g_clear_pointer (&self->config, corral_task_config_free);
        g_clear_pointer (&self->folder, g_free);
        if (record) {
                self->config = g_steal_pointer (&record->config);
                self->folder = g_strdup (self->config->folder);
        }
        start_task (self);
}

/* An earlier task chosen in the list: its record, its workspace again (made again if it was
 * removed), then its conversation. */
static void
reopen_task (CorralWindow *self, const char *vm_name)
{
        CorralSessionView *session = CORRAL_SESSION_VIEW (self->session);

        if (g_strcmp0 (corral_session_view_get_vm_name (session), vm_name) == 0 &&
            g_str_equal (corral_window_get_page (self), "session"))
                return; /* already on screen */
        g_free (self->reopen_vm);
        self->reopen_vm = g_strdup (vm_name);
        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        self->cancellable = g_cancellable_new ();
        corral_run_in_thread (load_record, g_strdup (vm_name), g_free,
                              (GDestroyNotify) corral_task_record_free, self->cancellable,
                              on_record_loaded, g_object_ref (self));
}

static void
on_task_open (CorralWindow *self, const char *vm_name)
{
        reopen_task (self, vm_name);
}

/* The home screen when the window opens: the person's tasks, if they have any, else the folder
 * of a new one (or the first run). Later listings only leave a list that became empty. */
static void
on_tasks_loaded (CorralWindow *self, guint n_tasks)
{
        const char *page = corral_window_get_page (self);
        gboolean at_folder =
                g_str_equal (page, "first-run") &&
                g_strcmp0 (corral_first_run_get_step (CORRAL_FIRST_RUN (self->first_run)),
                           "folder") == 0;

        if (!self->tasks_shown_once) {
                self->tasks_shown_once = TRUE;
                if (n_tasks > 0 && at_folder)
                        show_page (self, "tasks");
                else if (g_str_equal (page, "first-run"))
                        prepare_next_task (self);
        } else if (n_tasks == 0 && g_str_equal (page, "tasks")) {
                corral_window_new_task (self);
        } else if (at_folder) {
                show_page (self, page); /* Back to the list, now that there is one */
        }
}

void
corral_window_show_tasks (CorralWindow *self)
{
        g_return_if_fail (CORRAL_IS_WINDOW (self));
        corral_tasks_page_refresh (CORRAL_TASKS_PAGE (self->tasks_page));
        show_page (self, "tasks");
}

CorralTasksPage *
corral_window_get_tasks_page (CorralWindow *self)
{
        g_return_val_if_fail (CORRAL_IS_WINDOW (self), NULL);
        return CORRAL_TASKS_PAGE (self->tasks_page);
}

/* Actions -------------------------------------------------------------------------------------- */

GtkWindow *
corral_window_show_preferences (CorralWindow *self)
{
        CorralPreferences *prefs = corral_preferences_new (
                GTK_WINDOW (self), self->settings,
                corral_session_view_get_vm_dir (CORRAL_SESSION_VIEW (self->session)));

        gtk_window_present (GTK_WINDOW (prefs));
        return GTK_WINDOW (prefs);
}

static void
toggle_panel (GtkWidget *widget, const char *action, GVariant *param)
{
        CorralSessionView *session = CORRAL_SESSION_VIEW (CORRAL_WINDOW (widget)->session);

        corral_session_view_set_panel_visible (session,
                                               !corral_session_view_get_panel_visible (session));
}

void
corral_window_set_chat_source (CorralWindow *self, CorralChatSource *source)
{
        g_return_if_fail (CORRAL_IS_WINDOW (self));
        corral_session_view_set_chat_source (CORRAL_SESSION_VIEW (self->session), source);
}

static void
on_back_to_task (CorralWindow *self)
{
        CorralFirstRun *fr = CORRAL_FIRST_RUN (self->first_run);
        const char *shown = corral_session_view_get_vm_name (CORRAL_SESSION_VIEW (self->session));

        if (shown && g_strcmp0 (shown, self->paused_vm) != 0)
                show_page (self, "session");
        else if (g_strcmp0 (corral_first_run_get_step (fr), "folder") == 0 &&
                 corral_tasks_page_get_n_tasks (CORRAL_TASKS_PAGE (self->tasks_page)) > 0)
                show_page (self, "tasks");
        else if (g_strcmp0 (corral_first_run_get_step (fr), "folder") == 0)
                corral_first_run_show_step (fr, "provider");
        else
                corral_first_run_show_step (fr, "welcome");
}

/* A step of the first run: Back follows it. */
static void
on_first_run_step (CorralWindow *self)
{
        if (g_strcmp0 (corral_window_get_page (self), "first-run") == 0)
                show_page (self, "first-run");
}

static void
sync_panel_button (CorralWindow *self)
{
        CorralSessionView *session = CORRAL_SESSION_VIEW (self->session);

        if (gtk_toggle_button_get_active (GTK_TOGGLE_BUTTON (self->panel_button)) !=
            corral_session_view_get_panel_visible (session))
                corral_session_view_set_panel_visible (
                        session,
                        gtk_toggle_button_get_active (GTK_TOGGLE_BUTTON (self->panel_button)));
}

static void
corral_window_dispose (GObject *object)
{
        CorralWindow *self = CORRAL_WINDOW (object);

        g_cancellable_cancel (self->cancellable);
        g_clear_object (&self->cancellable);
        g_cancellable_cancel (self->assistant_cancellable);
        g_clear_object (&self->assistant_cancellable);
        g_clear_pointer (&self->assistant_for, corral_launch_result_free);
        g_clear_object (&self->launcher);
        g_clear_object (&self->settings);
        g_clear_pointer (&self->config, corral_task_config_free);
        g_clear_pointer (&self->folder, g_free);
        g_clear_pointer (&self->reopen_vm, g_free);
        g_clear_pointer (&self->paused_vm, g_free);
        gtk_widget_dispose_template (GTK_WIDGET (self), CORRAL_TYPE_WINDOW);
        G_OBJECT_CLASS (corral_window_parent_class)->dispose (object);
}

static void
corral_window_class_init (CorralWindowClass *klass)
{
        GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

        G_OBJECT_CLASS (klass)->dispose = corral_window_dispose;
        GTK_WINDOW_CLASS (klass)->close_request = corral_window_close_request;
        gtk_widget_class_install_action (widget_class, "win.toggle-panel", NULL, toggle_panel);
        gtk_widget_class_add_binding_action (widget_class, GDK_KEY_F9, 0, "win.toggle-panel", NULL);

        g_type_ensure (CORRAL_TYPE_TASKS_PAGE);
        g_type_ensure (CORRAL_TYPE_FIRST_RUN);
        g_type_ensure (CORRAL_TYPE_STARTING_PAGE);
        g_type_ensure (CORRAL_TYPE_SESSION_VIEW);
        gtk_widget_class_set_template_from_resource (widget_class,
                                                     "/org/corral/Corral/ui/corral-window.ui");
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, title);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, back_button);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, panel_button);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, toasts);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, stack);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, tasks_page);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, first_run);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, starting);
        gtk_widget_class_bind_template_child (widget_class, CorralWindow, session);
        gtk_widget_class_bind_template_callback (widget_class, on_back_to_task);
        gtk_widget_class_bind_template_callback (widget_class, on_task_open);
        gtk_widget_class_bind_template_callback (widget_class, on_first_run_step);
        gtk_widget_class_bind_template_callback (widget_class, on_tasks_loaded);
        gtk_widget_class_bind_template_callback (widget_class, corral_window_new_task);
        gtk_widget_class_bind_template_callback (widget_class, sync_panel_button);
        gtk_widget_class_bind_template_callback (widget_class, on_first_run_start);
        gtk_widget_class_bind_template_callback (widget_class, start_task);
        gtk_widget_class_bind_template_callback (widget_class, on_back);
}

/* CORRAL_BENCH_SHOWN=1 (tests/bench/bench-ui-startup.c): say on stdout when the first frame
 * was painted, so start-to-window time is measured the same way as for its baseline. */
static void
on_after_paint (GdkFrameClock *clock, CorralWindow *self)
{
        g_signal_handlers_disconnect_by_func (clock, on_after_paint, self);
        g_print ("shown\n");
        fflush (stdout);
}

static void
on_realize_bench (CorralWindow *self)
{
        g_signal_connect (gtk_widget_get_frame_clock (GTK_WIDGET (self)), "after-paint",
                          G_CALLBACK (on_after_paint), self);
}

static void
corral_window_init (CorralWindow *self)
{
        gtk_widget_init_template (GTK_WIDGET (self));
        if (g_strcmp0 (g_getenv ("CORRAL_BENCH_SHOWN"), "1") == 0)
                g_signal_connect (self, "realize", G_CALLBACK (on_realize_bench), NULL);
}

CorralWindow *
corral_window_new (GtkApplication *app, CorralLauncher *launcher, GSettings *settings)
{
        CorralWindow *self;

        g_return_val_if_fail (CORRAL_IS_LAUNCHER (launcher), NULL);
        self = g_object_new (CORRAL_TYPE_WINDOW, "application", app, NULL);
        self->launcher = g_object_ref (launcher);
        self->settings = g_object_ref (settings);
        corral_first_run_set_settings (CORRAL_FIRST_RUN (self->first_run), settings);
        gtk_window_set_default_size (GTK_WINDOW (self),
                                     g_settings_get_int (settings, "window-width"),
                                     g_settings_get_int (settings, "window-height"));
        if (g_settings_get_boolean (settings, "window-maximized"))
                gtk_window_maximize (GTK_WINDOW (self));
        corral_first_run_show_step (
                CORRAL_FIRST_RUN (self->first_run),
                g_settings_get_boolean (settings, "first-run-done") ? "folder" : "welcome");
        show_page (self, "first-run");
        gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (self->panel_button), TRUE);
        g_signal_connect_object (corral_session_view_get_chat (CORRAL_SESSION_VIEW (self->session)),
                                 "retry-requested", G_CALLBACK (on_retry_requested), self,
                                 G_CONNECT_SWAPPED);
        g_signal_connect_object (corral_session_view_get_chat (CORRAL_SESSION_VIEW (self->session)),
                                 "key-requested", G_CALLBACK (on_key_requested), self,
                                 G_CONNECT_SWAPPED);
        /* Then the person's tasks, once listed (on_tasks_loaded). */
        corral_tasks_page_set_launcher (CORRAL_TASKS_PAGE (self->tasks_page), launcher);
        return self;
}

CorralFirstRun *
corral_window_get_first_run (CorralWindow *self)
{
        return CORRAL_FIRST_RUN (self->first_run);
}

CorralStartingPage *
corral_window_get_starting_page (CorralWindow *self)
{
        return CORRAL_STARTING_PAGE (self->starting);
}

CorralSessionView *
corral_window_get_session_view (CorralWindow *self)
{
        return CORRAL_SESSION_VIEW (self->session);
}
