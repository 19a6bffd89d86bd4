/* assistant-shell.c — the shell tool: one command in the VM, bounded output, a timeout, and a kill
 * that really happens when the task is stopped.
 *
 * The command runs in the guest agent's process group, so a kill reaches its children too.
 * The host keeps only the first and last bytes of the output (AssistantCapture): a command that
 * prints gigabytes costs the host a few KiB, and the model sees where the output was cut.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "assistant-private.h"

#include "assistant-text.h"
#include "corral-process.h"

#include <glib/gi18n-lib.h>
#include <signal.h>
#include <string.h>

#define TITLE_MAX 80

typedef struct {
        AssistantToolCall *call;
        CorralProcess *proc;
        AssistantCapture capture;
        gulong cancel_id;
        guint timeout_s;
} Shell;

static void
shell_free (Shell *shell)
{
        if (shell->cancel_id)
                g_cancellable_disconnect (shell->call->cancellable, shell->cancel_id);
        if (shell->proc)
                g_signal_handlers_disconnect_by_data (shell->proc, shell);
        g_clear_object (&shell->proc);
        assistant_capture_clear (&shell->capture);
        g_free (shell);
}

static void
on_output (CorralProcess *proc, guint stream, GBytes *bytes, Shell *shell)
{
        gsize len;
        const guint8 *data = g_bytes_get_data (bytes, &len);

        assistant_capture_add (&shell->capture, data, len);
}

static char *
status_text (Shell *shell)
{
        CorralAssistantToolCard *card = shell->call->card;

        card->exit_code = corral_process_get_exit_code (shell->proc);
        card->term_signal = corral_process_get_term_signal (shell->proc);
        card->timed_out = corral_process_get_timed_out (shell->proc);
        if (card->timed_out)
                return g_strdup_printf (_ ("[timed out after %u s: the command was killed. Run "
                                           "long jobs in the background and check on them, or "
                                           "give a longer timeout.]"),
                                        shell->timeout_s);
        if (card->term_signal > 0)
                return g_strdup_printf (_ ("[killed by signal %d]"), card->term_signal);
        return g_strdup_printf (_ ("[exit status %d]"), card->exit_code);
}

/* The system calls the VM's filter refused the command (SECURITY.md A7), explained to the
 * model: which calls, that programs usually fall back, and that only the person can lift it. */
static char *
refused_text (const char *const *calls)
{
        g_autofree char *list = NULL;

        if (!calls || !calls[0])
                return g_strdup ("");
        list = g_strjoinv (", ", (char **) calls);
        return g_strdup_printf (
                _ ("[the sandbox refused these system calls: %s (the second wall inside the VM "
                   "refuses calls aimed at the kernel). Most programs fall back on their own; if "
                   "this command failed because of it, do not look for a way around: tell the "
                   "person which program needs it. Only they can let it run without that wall: "
                   "the task setting “Let Programs Use Blocked System Calls” (corralctl assistant "
                   "--unconfined-commands, corralctl exec --unconfined).]\n"),
                list);
}

int
assistant_shell_parse_status (const char *line, gsize len)
{
        /* The same (translated) format status_text() writes: text, a number, text. */
        const char *format = _ ("[exit status %d]");
        const char *d = strstr (format, "%d");
        gsize head, tail;
        g_autofree char *digits = NULL;
        guint64 code;

        if (!d)
                return -1;
        head = (gsize) (d - format);
        tail = strlen (d + 2);
        if (len <= head + tail || strncmp (line, format, head) != 0 ||
            strncmp (line + len - tail, d + 2, tail) != 0)
                return -1;
        digits = g_strndup (line + head, len - head - tail);
        if (!g_ascii_string_to_unsigned (digits, 10, 0, 255, &code, NULL))
                return -1;
        return (int) code;
}

static void
waited (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Shell *shell = user_data;
        AssistantToolCall *call = shell->call;
        g_autoptr (GError) error = NULL;
        g_autofree char *output = NULL;
        g_autofree char *status = NULL;
        g_autofree char *refused = NULL;

        if (!corral_process_wait_finish (CORRAL_PROCESS (source), result, &error)) {
                char *text =
                        g_strdup_printf (_ ("The command's end was not seen: %s"), error->message);
                shell_free (shell);
                assistant_tool_call_return (call, text, TRUE);
                return;
        }
        output = assistant_capture_to_text (&shell->capture);
        refused = refused_text (corral_process_get_refused_calls (shell->proc));
        status = status_text (shell);
        shell_free (shell);
        /* The status stays the last line (assistant_shell_parse_status). */
        assistant_tool_call_return (
                call,
                g_strdup_printf ("%s%s%s%s", *output ? output : _ ("(no output)\n"),
                                 *output && output[strlen (output) - 1] != '\n' ? "\n" : "",
                                 refused, status),
                call->card->timed_out);
}

/* Stop means stop: the process group dies now, and the call ends once the agent saw it exit. */
static void
on_cancelled (GCancellable *cancellable, gpointer user_data)
{
        Shell *shell = user_data;

        corral_process_kill (shell->proc, SIGKILL);
}

static void
spawned (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Shell *shell = user_data;
        AssistantToolCall *call = shell->call;
        g_autoptr (GError) error = NULL;

        shell->proc =
                corral_agent_client_spawn_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        if (!shell->proc) {
                char *text = g_strdup_printf (_ ("The command could not be started: %s"),
                                              error->message);
                shell_free (shell);
                assistant_tool_call_return (call, text, TRUE);
                return;
        }
        g_signal_connect (shell->proc, "output", G_CALLBACK (on_output), shell);
        if (call->cancellable)
                shell->cancel_id = g_cancellable_connect (call->cancellable,
                                                          G_CALLBACK (on_cancelled), shell, NULL);
        corral_process_wait_async (shell->proc, NULL, waited, shell);
}

static char *
shell_title (const char *command)
{
        g_autofree char *line = g_strndup (command, strcspn (command, "\n"));
        g_autofree char *valid = g_utf8_make_valid (line, -1);
        g_autofree char *cut = NULL;

        if (g_utf8_strlen (valid, -1) <= TITLE_MAX && !strchr (command, '\n'))
                return g_steal_pointer (&valid);
        cut = g_utf8_substring (valid, 0, MIN (g_utf8_strlen (valid, -1), TITLE_MAX));
        return g_strdup_printf ("%s…", cut);
}

void
assistant_tool_shell (AssistantToolCall *call)
{
        CorralAssistantSession *self = call->session;
        const char *command = NULL, *cwd = NULL;
        gint64 timeout = self->shell_default_timeout_s;
        g_autoptr (CorralExecSpec) spec = NULL;
        Shell *shell;

        if (!assistant_arg_string (call, "command", TRUE, &command) ||
            !assistant_arg_int (call, "timeout", 1, self->shell_max_timeout_s, FALSE, &timeout) ||
            !assistant_arg_string (call, "cwd", FALSE, &cwd))
                return;
        call->card->command = g_strdup (command);
        g_free (call->card->title);
        call->card->title = shell_title (command);
        spec = corral_exec_spec_new_shell (command);
        corral_exec_spec_set_timeout_ms (spec, (guint64) timeout * 1000);
        /* Only the person's setting, never the model's arguments, lifts the second wall. */
        corral_exec_spec_set_unconfined (spec, self->unconfined_commands);
        if (cwd)
                corral_exec_spec_set_cwd (spec, cwd);
        shell = g_new0 (Shell, 1);
        shell->call = call;
        shell->timeout_s = (guint) timeout;
        assistant_capture_init (&shell->capture, self->shell_head_tail);
        /* Not cancellable: a spawn abandoned half-way could leave a command running that
         * nobody would kill. Cancellation is checked once the process exists. */
        corral_agent_client_spawn_async (self->client, spec, NULL, spawned, shell);
}
