/* corralctl — command-line access to a Corral sandbox.
 *
 * exec, shell and info talk to the guest agent of a VM (corralctl exec VM -- CMD), or with
 * --local to an agent started on this machine as the calling user, with no VM and no isolation
 * (for development and tests). vm and image manage VMs and guest images.
 *
 * Exit status: the command's, 128 + N for a command killed by signal N, 124 when --timeout
 * killed it, 125 for corralctl's own failures.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-paths.h"
#include "corral-unix.h"
#include "corral-vmm.h"
#include "corralctl-assistant.h"
#include "corralctl-image.h"
#include "corralctl-changes.h"
#include "corralctl-computer.h"
#include "corralctl-gc.h"
#include "corralctl-mcp.h"
#include "corralctl-share.h"
#include "corralctl-net.h"
#include "corralctl-policy.h"
#include "corralctl-secret.h"
#include "corralctl-vm.h"

#include <errno.h>
#include <glib-unix.h>
#include <glib/gi18n.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define EXIT_TIMEOUT 124
#define EXIT_FAILURE_CTL 125
#define STDIN_CHUNK (64 * 1024)
/* After SIGTERM or SIGHUP is forwarded, how long the command has to end before its process
 * group is killed: whoever stops corralctl (timeout, a service manager) can always stop it. */
#define TERM_GRACE_MS 5000
/* After the kill, how long to wait for the agent to report the end before exiting anyway. */
#define KILL_WAIT_MS 2000

typedef struct {
        GMainLoop *loop;
        CorralVmManager *manager; /* when talking to a VM */
        const char *vm_name;
        CorralAgentClient *client;
        CorralProcess *proc;
        GPid agent_pid;
        int status;
        gboolean done;
        guint stdin_id;
        gboolean raw;
        struct termios saved_termios;
        /* Stopping: the Ctrl+C count, and the status to exit with once the command is killed. */
        guint interrupts;
        int forced_status;
        guint grace_id;
        guint kill_wait_id;
} Ctl;

/* Options shared by all commands. */
static gboolean opt_local;
static char *opt_agent;
static gboolean opt_verbose;
/* exec */
static char *opt_cwd;
static char **opt_env;
static double opt_timeout;
static gboolean opt_stdin;
static gboolean opt_unconfined;
static char **opt_command;

static const GOptionEntry common_entries[] = {
        { "local", 0, 0, G_OPTION_ARG_NONE, &opt_local,
          N_ ("Run the agent on this machine as you, without a VM: no isolation"), NULL },
        { "agent", 0, 0, G_OPTION_ARG_FILENAME, &opt_agent,
          N_ ("Path of corral-agent (default: $CORRAL_AGENT_PATH, then the installed one)"),
          N_ ("PATH") },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &opt_verbose, N_ ("Show debug messages"), NULL },
        { NULL }
};

static const GOptionEntry exec_entries[] = {
        { "cwd", 0, 0, G_OPTION_ARG_FILENAME, &opt_cwd, N_ ("Working directory"), N_ ("DIR") },
        { "env", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &opt_env, N_ ("Set an environment variable"),
          N_ ("KEY=VALUE") },
        { "timeout", 't', 0, G_OPTION_ARG_DOUBLE, &opt_timeout,
          N_ ("Kill the command after this many seconds"), N_ ("SECONDS") },
        { "interactive", 'i', 0, G_OPTION_ARG_NONE, &opt_stdin,
          N_ ("Forward standard input to the command"), NULL },
        { "unconfined", 0, 0, G_OPTION_ARG_NONE, &opt_unconfined,
          N_ ("Run without the second wall (seccomp filter, Landlock), for a program that needs "
              "a system call it refuses; the VM still isolates it"),
          NULL },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_command, NULL,
          N_ ("-- COMMAND [ARG…]") },
        { NULL }
};

static const GOptionEntry info_entries[] = { { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY,
                                               &opt_command, NULL, N_ ("[VM]") },
                                             { NULL } };

static const GOptionEntry shell_entries[] = { { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY,
                                                &opt_command, NULL, N_ ("[-- COMMAND [ARG…]]") },
                                              { NULL } };

static void
fail (const char *message)
{
        g_printerr ("corralctl: %s\n", message);
}

/* Looks for the agent: --agent, else where corral_paths_helper says this Corral keeps it. */
static char *
find_agent (GError **error)
{
        const char *path = opt_agent ? opt_agent : corral_paths_helper (CORRAL_HELPER_AGENT);

        if (g_file_test (path, G_FILE_TEST_IS_EXECUTABLE))
                return g_strdup (path);
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                     _ ("Could not find corral-agent at %s; pass --agent"), path);
        return NULL;
}

typedef struct {
        gboolean done;
        GError **error;
} ConnectWait;

static void
connected_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        ConnectWait *wait = user_data;

        corral_agent_client_connect_fd_finish (CORRAL_AGENT_CLIENT (source), result, wait->error);
        wait->done = TRUE;
}

static gboolean start_local (Ctl *ctl, GError **error);

/* The agent of ctl->vm_name, or a local one with --local. */
static gboolean
start_agent (Ctl *ctl, GError **error)
{
        if (opt_local)
                return start_local (ctl, error);
        return corralctl_vm_connect (ctl->vm_name, &ctl->manager, &ctl->client, error);
}

static gboolean
start_local (Ctl *ctl, GError **error)
{
        g_autofree char *agent = find_agent (error);
        const char *args[] = { "--user", g_get_user_name (), NULL, NULL };
        ConnectWait wait = { FALSE, error };
        int fd;

        if (!agent)
                return FALSE;
        if (opt_verbose)
                args[2] = "--verbose";
        if (!corral_agent_client_spawn_local_agent (agent, args, &ctl->agent_pid, &fd, error))
                return FALSE;
        ctl->client = corral_agent_client_new ();
        corral_agent_client_connect_fd_async (ctl->client, fd, NULL, connected_cb, &wait);
        while (!wait.done)
                g_main_context_iteration (NULL, TRUE);
        return *error == NULL;
}

static void
stop_local (Ctl *ctl)
{
        if (ctl->client)
                corral_agent_client_close (ctl->client);
        g_clear_object (&ctl->proc);
        g_clear_object (&ctl->client);
        g_clear_object (&ctl->manager);
        if (ctl->agent_pid <= 0)
                return;
        /* The agent exits on EOF; give it a moment to clean up, then insist. */
        for (int i = 0; i < 200; i++) {
                if (waitpid (ctl->agent_pid, NULL, WNOHANG) != 0)
                        goto out;
                g_usleep (10000);
        }
        kill (ctl->agent_pid, SIGKILL);
        waitpid (ctl->agent_pid, NULL, 0);
out:
        g_spawn_close_pid (ctl->agent_pid);
        ctl->agent_pid = 0;
}

static void
finish (Ctl *ctl, int status)
{
        if (ctl->done)
                return;
        ctl->done = TRUE;
        ctl->status = status;
        g_main_loop_quit (ctl->loop);
}

static void
on_disconnected (CorralAgentClient *client, GError *error, Ctl *ctl)
{
        g_autofree char *msg =
                g_strdup_printf (_ ("lost the connection to the agent: %s"), error->message);

        if (!ctl->done)
                fail (msg);
        finish (ctl, EXIT_FAILURE_CTL);
}

/* Output and input --------------------------------------------------------------------------- */

static void
on_output (CorralProcess *proc, guint stream, GBytes *bytes, Ctl *ctl)
{
        gsize len;
        const guint8 *data = g_bytes_get_data (bytes, &len);

        /* A blocking write is the flow control: no credit goes back until it is done. */
        (void) corral_write_all (stream == CORRAL_PROCESS_STDERR ? STDERR_FILENO : STDOUT_FILENO,
                                 data, len);
}

static void
on_exited (CorralProcess *proc, Ctl *ctl)
{
        int code = corral_process_get_exit_code (proc);
        int sig = corral_process_get_term_signal (proc);
        const char *const *refused = corral_process_get_refused_calls (proc);

        if (refused && refused[0]) {
                g_autofree char *list = g_strjoinv (", ", (char **) refused);
                g_autofree char *msg = g_strdup_printf (
                        _ ("the sandbox refused system calls the command made: %s (SECURITY.md "
                           "A7). Most programs fall back on their own; if this one failed "
                           "because of it and you trust it, run it again with --unconfined"),
                        list);

                fail (msg);
        }

        if (ctl->forced_status) {
                finish (ctl, ctl->forced_status);
        } else if (corral_process_get_timed_out (proc)) {
                fail (_ ("the command timed out"));
                finish (ctl, EXIT_TIMEOUT);
        } else {
                finish (ctl, sig > 0 ? 128 + sig : code);
        }
}

static gboolean on_stdin (int fd, GIOCondition cond, gpointer user_data);

static void
stdin_written (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Ctl *ctl = user_data;

        if (!corral_process_write_finish (CORRAL_PROCESS (source), result, NULL))
                return;
        /* Read more only once this chunk is out: the agent's credit paces us. */
        ctl->stdin_id = g_unix_fd_add (STDIN_FILENO, G_IO_IN | G_IO_HUP, on_stdin, ctl);
}

static gboolean
on_stdin (int fd, GIOCondition cond, gpointer user_data)
{
        Ctl *ctl = user_data;
        g_autofree guint8 *buf = g_malloc (STDIN_CHUNK);
        g_autoptr (GBytes) bytes = NULL;
        gssize n = read (fd, buf, STDIN_CHUNK);

        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                return G_SOURCE_CONTINUE;
        ctl->stdin_id = 0;
        if (n <= 0) {
                corral_process_close_stdin (ctl->proc);
                return G_SOURCE_REMOVE;
        }
        bytes = g_bytes_new_take (g_steal_pointer (&buf), (gsize) n);
        corral_process_write_async (ctl->proc, bytes, NULL, stdin_written, ctl);
        return G_SOURCE_REMOVE;
}

/* Stopping the command ------------------------------------------------------------------------
 *
 * Like ssh and systemd-run: the agent runs the command in a process group of its own (in the
 * VM, or in its own session with --local), so signals reach it only when corralctl forwards
 * them. Ctrl+C is forwarded; a second one kills the group and exits with 130. SIGTERM and SIGHUP
 * are forwarded, and if the command is still there after TERM_GRACE_MS, its group is killed. */

static gboolean
kill_wait_over (gpointer user_data)
{
        Ctl *ctl = user_data;

        /* The agent did not confirm in time (a VM that hangs): exit all the same. */
        ctl->kill_wait_id = 0;
        finish (ctl, ctl->forced_status);
        return G_SOURCE_REMOVE;
}

static void
kill_and_exit (Ctl *ctl, int status)
{
        ctl->forced_status = status;
        corral_process_kill (ctl->proc, SIGKILL);
        if (!ctl->kill_wait_id)
                ctl->kill_wait_id = g_timeout_add (KILL_WAIT_MS, kill_wait_over, ctl);
}

static gboolean
term_grace_over (gpointer user_data)
{
        Ctl *ctl = user_data;

        ctl->grace_id = 0;
        kill_and_exit (ctl, 128 + SIGTERM);
        return G_SOURCE_REMOVE;
}

/* A signal before the command started: nothing to forward it to. Once corralctl is gone, the
 * agent ends the session and kills what it may still have started. */
static gboolean
stopped_before_start (Ctl *ctl, int sig)
{
        if (ctl->proc)
                return FALSE;
        finish (ctl, 128 + sig);
        return TRUE;
}

static gboolean
on_sigint (gpointer user_data)
{
        Ctl *ctl = user_data;

        if (stopped_before_start (ctl, SIGINT))
                return G_SOURCE_CONTINUE;
        if (++ctl->interrupts > 1)
                kill_and_exit (ctl, 128 + SIGINT);
        else
                corral_process_kill (ctl->proc, SIGINT);
        return G_SOURCE_CONTINUE;
}

static void
forward_with_grace (Ctl *ctl, int sig)
{
        if (stopped_before_start (ctl, sig))
                return;
        corral_process_kill (ctl->proc, sig);
        if (!ctl->grace_id && !ctl->forced_status)
                ctl->grace_id = g_timeout_add (TERM_GRACE_MS, term_grace_over, ctl);
}

static gboolean
on_sigterm (gpointer user_data)
{
        forward_with_grace (user_data, SIGTERM);
        return G_SOURCE_CONTINUE;
}

/* The terminal is gone: the command gets its hangup, then the same grace as for SIGTERM. */
static gboolean
on_sighup (gpointer user_data)
{
        forward_with_grace (user_data, SIGHUP);
        return G_SOURCE_CONTINUE;
}

static void
get_winsize (guint *rows, guint *cols)
{
        struct winsize ws = { 0 };

        *rows = 24;
        *cols = 80;
        if (ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
                *rows = ws.ws_row;
                *cols = ws.ws_col;
        }
}

static gboolean
on_winch (gpointer user_data)
{
        Ctl *ctl = user_data;
        guint rows, cols;

        if (!ctl->proc)
                return G_SOURCE_CONTINUE;
        get_winsize (&rows, &cols);
        corral_process_resize (ctl->proc, rows, cols);
        return G_SOURCE_CONTINUE;
}

/* Running ------------------------------------------------------------------------------------- */

static void
spawned_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        Ctl *ctl = user_data;
        g_autoptr (GError) error = NULL;

        ctl->proc = corral_agent_client_spawn_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        if (!ctl->proc) {
                fail (error->message);
                finish (ctl, EXIT_FAILURE_CTL);
                return;
        }
        g_signal_connect (ctl->proc, "output", G_CALLBACK (on_output), ctl);
        g_signal_connect (ctl->proc, "exited", G_CALLBACK (on_exited), ctl);
}

static int
run_process (Ctl *ctl, CorralExecSpec *spec, gboolean forward_stdin, gboolean pty)
{
        guint sig_ids[4] = { 0 };

        ctl->loop = g_main_loop_new (NULL, FALSE);
        g_signal_connect (ctl->client, "disconnected", G_CALLBACK (on_disconnected), ctl);
        /* Before the spawn: its reply and the command's first output can come in one read. */
        sig_ids[0] = g_unix_signal_add (SIGINT, on_sigint, ctl);
        sig_ids[1] = g_unix_signal_add (SIGTERM, on_sigterm, ctl);
        sig_ids[2] = g_unix_signal_add (SIGHUP, on_sighup, ctl);
        if (pty)
                sig_ids[3] = g_unix_signal_add (SIGWINCH, on_winch, ctl);
        corral_agent_client_spawn_async (ctl->client, spec, NULL, spawned_cb, ctl);
        while (!ctl->proc && !ctl->done)
                g_main_context_iteration (NULL, TRUE);
        if (ctl->proc && forward_stdin)
                ctl->stdin_id = g_unix_fd_add (STDIN_FILENO, G_IO_IN | G_IO_HUP, on_stdin, ctl);
        if (!ctl->done)
                g_main_loop_run (ctl->loop);
        for (gsize i = 0; i < G_N_ELEMENTS (sig_ids); i++)
                if (sig_ids[i])
                        g_source_remove (sig_ids[i]);
        g_clear_handle_id (&ctl->stdin_id, g_source_remove);
        g_clear_handle_id (&ctl->grace_id, g_source_remove);
        g_clear_handle_id (&ctl->kill_wait_id, g_source_remove);
        if (ctl->proc)
                g_signal_handlers_disconnect_by_data (ctl->proc, ctl);
        g_signal_handlers_disconnect_by_data (ctl->client, ctl);
        g_main_loop_unref (ctl->loop);
        return ctl->status;
}

static CorralExecSpec *
exec_spec (GError **error)
{
        g_autoptr (CorralExecSpec) spec = NULL;

        if (!opt_command || !opt_command[0]) {
                g_set_error_literal (
                        error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        _ ("No command given (usage: corralctl exec --local -- COMMAND [ARG…])"));
                return NULL;
        }
        spec = corral_exec_spec_new_argv ((const char *const *) opt_command);
        for (char **e = opt_env; e && *e; e++) {
                const char *eq = strchr (*e, '=');
                g_autofree char *key = NULL;

                if (!eq || eq == *e) {
                        g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                                     _ ("--env needs KEY=VALUE, got “%s”"), *e);
                        return NULL;
                }
                key = g_strndup (*e, eq - *e);
                corral_exec_spec_set_env (spec, key, eq + 1);
        }
        if (opt_cwd)
                corral_exec_spec_set_cwd (spec, opt_cwd);
        if (opt_timeout < 0 || opt_timeout > 1e9) {
                g_set_error_literal (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                                     _ ("--timeout must be a positive number of seconds"));
                return NULL;
        }
        if (opt_timeout > 0)
                corral_exec_spec_set_timeout_ms (spec, MAX ((guint64) (opt_timeout * 1000), 1));
        corral_exec_spec_set_stdin (spec, opt_stdin);
        corral_exec_spec_set_unconfined (spec, opt_unconfined);
        return g_steal_pointer (&spec);
}

static int
cmd_exec (Ctl *ctl, GError **error)
{
        g_autoptr (CorralExecSpec) spec = exec_spec (error);

        if (!spec || !start_agent (ctl, error))
                return EXIT_FAILURE_CTL;
        return run_process (ctl, spec, opt_stdin, FALSE);
}

static void
raw_mode (Ctl *ctl)
{
        struct termios raw;

        if (!isatty (STDIN_FILENO) || tcgetattr (STDIN_FILENO, &ctl->saved_termios) < 0)
                return;
        raw = ctl->saved_termios;
        cfmakeraw (&raw);
        if (tcsetattr (STDIN_FILENO, TCSANOW, &raw) == 0)
                ctl->raw = TRUE;
}

static int
cmd_shell (Ctl *ctl, GError **error)
{
        const char *shell = g_getenv ("SHELL");
        const char *argv[] = { shell && *shell ? shell : "/bin/sh", NULL };
        const char *term = g_getenv ("TERM");
        g_autoptr (CorralExecSpec) spec = NULL;
        guint rows, cols;
        int status;

        if (!start_agent (ctl, error))
                return EXIT_FAILURE_CTL;
        spec = corral_exec_spec_new_argv (
                opt_command && opt_command[0] ? (const char *const *) opt_command : argv);
        get_winsize (&rows, &cols);
        corral_exec_spec_set_pty (spec, rows, cols);
        corral_exec_spec_set_stdin (spec, TRUE);
        corral_exec_spec_set_env (spec, "TERM", term && *term ? term : "xterm-256color");
        raw_mode (ctl);
        status = run_process (ctl, spec, TRUE, TRUE);
        if (ctl->raw)
                tcsetattr (STDIN_FILENO, TCSANOW, &ctl->saved_termios);
        return status;
}

static void
info_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
        cJSON **ret = user_data;
        g_autoptr (GError) error = NULL;

        *ret = corral_agent_client_info_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        if (!*ret) {
                fail (error->message);
                *ret = cJSON_CreateNull ();
        }
}

static int
cmd_info (Ctl *ctl, GError **error)
{
        g_autoptr (cJSON) info = NULL;
        g_autofree char *text = NULL;
        const char *version, *boot_id;

        if (!start_agent (ctl, error))
                return EXIT_FAILURE_CTL;
        corral_agent_client_info_async (ctl->client, NULL, info_cb, &info);
        while (!info)
                g_main_context_iteration (NULL, TRUE);
        if (cJSON_IsNull (info))
                return EXIT_FAILURE_CTL;
        if (opt_local)
                g_print (_ ("Transport: local (no isolation)\n"));
        else
                g_print (_ ("VM: %s\n"), ctl->vm_name);
        version = corral_agent_client_get_agent_version (ctl->client);
        boot_id = corral_agent_client_get_boot_id (ctl->client);
        g_print (_ ("Agent version: %s\n"), version ? version : _ ("unknown"));
        g_print (_ ("Boot id: %s\n"), boot_id ? boot_id : _ ("unknown"));
        /* cJSON escapes control characters in the guest's strings. */
        text = cJSON_Print (info);
        g_print ("%s\n", text);
        return EXIT_SUCCESS;
}

/* main ---------------------------------------------------------------------------------------- */

static const struct {
        const char *name;
        const char *summary;
        const GOptionEntry *entries;
        int (*run) (Ctl *ctl, GError **error);
} commands[] = {
        { "exec", N_ ("Run a command and stream its output"), exec_entries, cmd_exec },
        { "shell", N_ ("Open an interactive shell on a terminal"), shell_entries, cmd_shell },
        { "info", N_ ("Show information about the agent and its machine"), info_entries, cmd_info },
};

static void
usage (FILE *out)
{
        fprintf (out, _ ("Usage: corralctl exec|shell|info VM|--local [OPTION…] [-- COMMAND…]\n"
                         "       corralctl vm|image SUBCOMMAND…\n\nCommands:\n"));
        for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
                fprintf (out, "  %-9s %s\n", commands[i].name, _ (commands[i].summary));
        fprintf (out, "  %-9s %s\n", "vm", _ ("Create, start, stop, pause, save and remove VMs"));
        fprintf (out, "  %-9s %s\n", "gc",
                 _ ("Delete VM folders without a VM and images no VM uses (--dry-run)"));
        fprintf (out, "  %-9s %s\n", "image", _ ("Build, verify and list guest images"));
        fprintf (out, "  %-9s %s\n", "share",
                 _ ("Share folders with a VM: can read, can edit, can edit but not delete"));
        fprintf (out, "  %-9s %s\n", "net", _ ("Show and change a VM's network policy"));
        fprintf (out, "  %-9s %s\n", "changes",
                 _ ("List what the assistant changed in a VM's shared folders"));
        fprintf (out, "  %-9s %s\n", "diff", _ ("Show those changes as a unified diff"));
        fprintf (out, "  %-9s %s\n", "undo",
                 _ ("Put files back as they were before the assistant changed them"));
        fprintf (out, "  %-9s %s\n", "keep",
                 _ ("Keep every change and remove the originals kept for undo"));
        fprintf (out, "  %-9s %s\n", "computer",
                 _ ("Screenshots, clicks and typing on a VM's screen (computer use)"));
        fprintf (out, "  %-9s %s\n", "policy",
                 _ ("Show and check your organisation’s managed policy"));
        fprintf (out, "  %-9s %s\n", "secret", _ ("Store, list and remove keychain secrets"));
        fprintf (out, "  %-9s %s\n", "mcp", _ ("Serve a VM as an MCP server on stdin/stdout"));
        fprintf (out, "  %-9s %s\n", "assistant",
                 _ ("Give a task to the AI assistant, which works in a VM (also: agent)"));
        fprintf (out,
                 _ ("\n--local runs corral-agent on this machine as you: there is NO sandbox.\n"
                    "Use “corralctl COMMAND --help” for the options of a command,\n"
                    "“corralctl --version” for the version.\n\n"
                    "Exit status: the command's; 128+N if signal N killed it; 124 if --timeout\n"
                    "killed it; 125 if corralctl itself failed.\n\n"
                    "Ctrl+C reaches the command; a second one kills it and exits with 130.\n"
                    "SIGTERM and SIGHUP reach it too; 5 s later it is killed if still there.\n\n"
                    "Environment:\n"
                    "  CORRAL_LIBVIRT_URI  the libvirt to run VMs on (default: qemu:///session;\n"
                    "                      for root qemu:///system when libvirtd runs, else an\n"
                    "                      embedded one); a remote URI such as\n"
                    "                      qemu+ssh://HOST/system runs them on HOST\n"
                    "  CORRAL_ACCEL        kvm or tcg, instead of what the host offers\n"));
}

static int
run_command (int i, int argc, char **argv)
{
        g_autoptr (GOptionContext) context = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *param = g_strdup_printf ("corralctl %s", commands[i].name);
        Ctl ctl = { 0 };
        int status;

        context = g_option_context_new (NULL);
        g_option_context_set_summary (context, _ (commands[i].summary));
        g_option_context_set_description (context,
                                          _ ("--local runs corral-agent on this machine as the "
                                             "calling user, with no VM and no isolation: the one "
                                             "--agent names, else the one installed with corralctl "
                                             "(or built next to it)."));
        g_option_context_add_main_entries (context, common_entries, NULL);
        if (commands[i].entries)
                g_option_context_add_main_entries (context, commands[i].entries, NULL);
        argv[0] = param;
        if (!g_option_context_parse (context, &argc, &argv, &error)) {
                fail (error->message);
                return EXIT_FAILURE_CTL;
        }
        if (!opt_local) {
                /* corralctl exec VM -- CMD: the VM is the first argument. */
                if (!opt_command || !opt_command[0]) {
                        fail (_ ("name a VM (see “corralctl vm ls”), or use --local"));
                        return EXIT_FAILURE_CTL;
                }
                ctl.vm_name = opt_command[0];
                opt_command++;
        }
        if (opt_verbose)
                g_setenv ("G_MESSAGES_DEBUG", "corral-vmm", TRUE);
        status = commands[i].run (&ctl, &error);
        if (error)
                fail (error->message);
        stop_local (&ctl);
        return status;
}

static int
dispatch (int argc, char **argv)
{
        bindtextdomain (GETTEXT_PACKAGE, corral_paths_locale_dir ());
        bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
        textdomain (GETTEXT_PACKAGE);
        if (argc < 2 || g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h")) {
                usage (argc < 2 ? stderr : stdout);
                return argc < 2 ? EXIT_FAILURE_CTL : EXIT_SUCCESS;
        }
        if (g_str_equal (argv[1], "--version")) {
                g_print ("corralctl %s\n", CORRAL_VERSION);
                return EXIT_SUCCESS;
        }
        if (g_str_equal (argv[1], "image"))
                return corralctl_image_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "vm"))
                return corralctl_vm_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "gc"))
                return corralctl_gc_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "share"))
                return corralctl_share_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "net"))
                return corralctl_net_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "changes") || g_str_equal (argv[1], "diff") ||
            g_str_equal (argv[1], "undo") || g_str_equal (argv[1], "keep"))
                return corralctl_changes_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "computer"))
                return corralctl_computer_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "policy"))
                return corralctl_policy_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "secret"))
                return corralctl_secret_main (argc - 1, argv + 1);
        if (g_str_equal (argv[1], "mcp"))
                return corralctl_mcp_main (argc - 1, argv + 1);
        /* "agent" was its first name; scripts keep working. */
        if (g_str_equal (argv[1], "assistant") || g_str_equal (argv[1], "agent"))
                return corralctl_assistant_main (argc - 1, argv + 1);
        for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
                if (g_str_equal (argv[1], commands[i].name))
                        return run_command ((int) i, argc - 1, argv + 1);
        g_printerr (_ ("corralctl: unknown command “%s”\n"), argv[1]);
        usage (stderr);
        return EXIT_FAILURE_CTL;
}

static int exit_status;
static pid_t main_pid;

/* Runs first at exit (registered last): with libvirt's embedded driver open, its threads may
 * still be reconnecting to VMs, and the C library's destructors must not run under them
 * (corral_vm_manager_embedded_opened). Everything of ours is done and written by now. */
static void
exit_before_destructors (void)
{
        /* Only main()'s own return: never a forked child's exit. */
        if (getpid () != main_pid || !corral_vm_manager_embedded_opened ())
                return;
        fflush (stdout);
        fflush (stderr);
        _exit (exit_status);
}

int
main (int argc, char **argv)
{
        setlocale (LC_ALL, "");
        main_pid = getpid ();
        atexit (exit_before_destructors);
        exit_status = dispatch (argc, argv);
        return exit_status;
}
