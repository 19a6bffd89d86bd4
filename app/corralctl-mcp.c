/* corralctl-mcp.c — `corralctl mcp VM`: the VM's guest agent behind an MCP server on stdio.
 *
 * stdout carries MCP only: the real stdout is moved to a private fd and fd 1 is pointed at
 * stderr, so nothing else printed by accident (a library, a log handler) can corrupt the stream.
 *
 * For tests there is a hidden --local-agent: the agent runs on this machine as the calling user,
 * with NO sandbox (like `corralctl exec --local`); it exists so that the test suite can drive the
 * server with real MCP clients without booting a VM. The agent is found with --agent or
 * $CORRAL_AGENT_PATH.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-mcp.h"

#include "corral-mcp.h"
#include "corral-paths.h"
#include "corral-task-start.h"
#include "corralctl-computer.h"
#include "corralctl-share.h"
#include "corralctl-vm.h"

#include <fcntl.h>
#include <gio/gunixinputstream.h>
#include <gio/gunixoutputstream.h>
#include <glib/gi18n.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_CTL 125

static gboolean opt_local_agent;
static gboolean opt_computer;
static char *opt_agent;
static char **opt_rest;

static const GOptionEntry entries[] = {
        { "local-agent", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_NONE, &opt_local_agent,
          "Serve an agent started on this machine, with no VM and no isolation (tests only)",
          NULL },
        { "agent", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt_agent,
          "Path of corral-agent for --local-agent", "PATH" },
        { "computer", 0, 0, G_OPTION_ARG_NONE, &opt_computer,
          N_ ("Also offer the computer tool on the VM's screen (a VM made with vm create "
              "--screen): screenshots, clicks, typing"),
          NULL },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_rest, NULL, N_ ("VM") },
        { NULL }
};

typedef struct {
        CorralVmManager *manager;
        CorralAgentClient *client;
        CorralComputer *computer; /* nullable */
        char *vm_dir; /* nullable: with the computer, its log's folder */
        GPid agent_pid;
        GCancellable *cancellable;
        GAsyncResult *result;
} Mcp;

static gboolean
connect_local (Mcp *mcp, GError **error)
{
        const char *path = opt_agent ? opt_agent : corral_paths_helper (CORRAL_HELPER_AGENT);
        const char *args[] = { "--user", g_get_user_name (), NULL };
        g_autoptr (GAsyncResult) res = NULL;
        int fd;

        if (!g_file_test (path, G_FILE_TEST_IS_EXECUTABLE)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("Could not find corral-agent at %s; pass --agent"), path);
                return FALSE;
        }
        if (!corral_agent_client_spawn_local_agent (path, args, &mcp->agent_pid, &fd, error))
                return FALSE;
        mcp->client = corral_agent_client_new ();
        corral_agent_client_connect_fd_async (mcp->client, fd, NULL, corralctl_got_result, &res);
        return corral_agent_client_connect_fd_finish (mcp->client, corralctl_wait_for (&res),
                                                      error);
}

static void
stop (Mcp *mcp)
{
        if (mcp->client)
                corral_agent_client_close (mcp->client);
        g_clear_object (&mcp->client);
        g_clear_object (&mcp->manager);
        g_clear_object (&mcp->cancellable);
        g_clear_object (&mcp->result);
        g_clear_object (&mcp->computer);
        g_clear_pointer (&mcp->vm_dir, g_free);
        if (mcp->agent_pid > 0) {
                /* The agent exits at EOF on its socket. */
                waitpid (mcp->agent_pid, NULL, 0);
                g_spawn_close_pid (mcp->agent_pid);
        }
}

static void
on_disconnected (CorralAgentClient *client, GError *error, Mcp *mcp)
{
        g_printerr (_ ("corralctl: lost the connection to the agent: %s\n"), error->message);
        g_cancellable_cancel (mcp->cancellable);
}

/* Moves the real stdout out of reach of stray prints; returns it (O_CLOEXEC). */
static int
claim_stdout (void)
{
        int fd = fcntl (STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);

        if (fd >= 0)
                dup2 (STDERR_FILENO, STDOUT_FILENO);
        return fd;
}

static int
serve (Mcp *mcp, const char *vm_name)
{
        g_autoptr (CorralMcpServer) server = corral_mcp_server_new (mcp->client, vm_name);
        g_autoptr (GInputStream) in = NULL;
        g_autoptr (GOutputStream) out = NULL;
        g_autoptr (GError) error = NULL;
        int fd = claim_stdout ();

        if (fd < 0) {
                g_printerr ("corralctl: %s\n", g_strerror (errno));
                return EXIT_CTL;
        }
        if (mcp->computer)
                corral_mcp_server_set_computer (server, mcp->computer, mcp->vm_dir);
        in = g_unix_input_stream_new (STDIN_FILENO, FALSE);
        out = g_unix_output_stream_new (fd, TRUE);
        mcp->cancellable = g_cancellable_new ();
        g_signal_connect (mcp->client, "disconnected", G_CALLBACK (on_disconnected), mcp);
        corral_mcp_server_run_async (server, in, out, mcp->cancellable, corralctl_got_result,
                                     &mcp->result);
        corralctl_wait_for (&mcp->result);
        g_signal_handlers_disconnect_by_data (mcp->client, mcp);
        if (!corral_mcp_server_run_finish (server, mcp->result, &error)) {
                g_printerr ("corralctl: %s\n", error->message);
                return EXIT_CTL;
        }
        return g_cancellable_is_cancelled (mcp->cancellable) ? EXIT_CTL : EXIT_SUCCESS;
}

int
corralctl_mcp_main (int argc, char **argv)
{
        g_autoptr (GOptionContext) context = g_option_context_new (NULL);
        g_autoptr (GError) error = NULL;
        const char *vm_name = NULL;
        Mcp mcp = { 0 };
        int status;

        g_option_context_set_summary (
                context,
                _ ("Serve a VM as an MCP server on standard input and output: other MCP "
                   "clients can run commands and edit files in the VM.\nTools: exec, "
                   "read_file, write_file, list_dir, vm_info; with --computer, computer."));
        g_option_context_add_main_entries (context, entries, NULL);
        /* A log line on stdout would corrupt the protocol. */
        g_log_writer_default_set_use_stderr (TRUE);
        signal (SIGPIPE, SIG_IGN);
        if (!g_option_context_parse (context, &argc, &argv, &error)) {
                g_printerr ("corralctl: %s\n", error->message);
                return EXIT_CTL;
        }
        if (!opt_local_agent && (!opt_rest || !opt_rest[0] || opt_rest[1])) {
                g_printerr (_ ("corralctl: usage: corralctl mcp VM\n"));
                return EXIT_CTL;
        }
        vm_name = opt_local_agent ? NULL : opt_rest[0];
        if (opt_local_agent)
                g_printerr (_ ("corralctl: --local-agent: commands run on this machine, "
                               "with NO sandbox\n"));
        if (opt_local_agent ? !connect_local (&mcp, &error)
                            : !corralctl_vm_connect (vm_name, &mcp.manager, &mcp.client, &error)) {
                g_printerr ("corralctl: %s\n", error->message);
                stop (&mcp);
                return EXIT_CTL;
        }
        if (opt_computer) {
                /* The person asked for it; the organisation may have turned it off. */
                if (!vm_name) {
                        g_printerr (_ ("corralctl: --computer needs a VM with a screen\n"));
                        stop (&mcp);
                        return EXIT_CTL;
                }
                if (!corral_task_check_computer_use (&error) ||
                    !(mcp.vm_dir = corralctl_vm_dir (vm_name, &error)) ||
                    !(mcp.computer = corralctl_computer_open (vm_name, mcp.vm_dir, &error))) {
                        g_printerr ("corralctl: %s\n", error->message);
                        stop (&mcp);
                        return EXIT_CTL;
                }
        }
        status = serve (&mcp, vm_name);
        stop (&mcp);
        return status;
}
