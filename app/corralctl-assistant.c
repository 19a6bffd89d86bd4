/* corralctl-assistant.c — `corralctl assistant VM "task"`: the assistant on a terminal.
 *
 * The model's text streams to stdout, each tool call is one line (and a result line), and an
 * approval is a y/N question on the terminal. When stdin is not a terminal, or with
 * --yes-to-nothing, every approval is denied without asking: a script cannot say yes by
 * accident. The question says exactly what the host will do: for a delete, the path inside the
 * shared folder, the folder's name and mode and where it is on this computer; for a host on
 * this computer or a local network, a warning. Everything a model or a command wrote is
 * stripped of control characters before it reaches the terminal; in a question, the model's
 * words are shown escaped on one line (\n, \x1b), so they cannot draw a prompt of their own.
 * Ctrl-C stops the task (and kills its command in the VM); a second Ctrl-C quits at once.
 *
 * API keys come from llm-keys.h (environment or keychain), never from the command line.
 *
 * Exit status: 0 when the model finished, 1 when it stopped at the step limit or refused,
 * 130 when stopped with Ctrl-C, 125 for failures (the model could not be reached, no VM, ...).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-assistant.h"

#include "assistant-text.h"
#include "corral-assistant-loop.h"
#include "corral-paths.h"
#include "corral-secret-store.h"
#include "corral-task-start.h"
#include "corral-vm-host.h"
#include "corralctl-computer.h"
#include "corralctl-vm.h"

#include <glib-unix.h>
#include <glib/gi18n.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_CTL 125
#define EXIT_STOPPED 1
#define EXIT_INTERRUPTED 130

static gboolean opt_local;
static char *opt_agent;
static char *opt_provider;
static char *opt_model;
static char *opt_resume;
static int opt_max_steps;
static gboolean opt_no;
static gboolean opt_unconfined;
static gboolean opt_computer;
static char *opt_vm_dir;
static char **opt_rest;

static const GOptionEntry entries[] = {
        { "local", 0, 0, G_OPTION_ARG_NONE, &opt_local,
          N_ ("Run commands on this machine as you, without a VM: NO sandbox (tests)"), NULL },
        { "agent", 0, 0, G_OPTION_ARG_FILENAME, &opt_agent,
          N_ ("Path of corral-agent for --local (default: $CORRAL_AGENT_PATH)"), N_ ("PATH") },
        { "provider", 0, 0, G_OPTION_ARG_STRING, &opt_provider,
          N_ ("anthropic (default) or openai (any OpenAI-compatible server)"), N_ ("NAME") },
        { "model", 'm', 0, G_OPTION_ARG_STRING, &opt_model, N_ ("The model to use"), N_ ("MODEL") },
        { "resume", 0, 0, G_OPTION_ARG_STRING, &opt_resume, N_ ("Continue a session"), N_ ("ID") },
        { "max-steps", 0, 0, G_OPTION_ARG_INT, &opt_max_steps,
          N_ ("Stop after this many model replies (default 50)"), N_ ("N") },
        { "yes-to-nothing", 0, 0, G_OPTION_ARG_NONE, &opt_no,
          N_ ("Deny every approval request without asking"), NULL },
        { "unconfined-commands", 0, 0, G_OPTION_ARG_NONE, &opt_unconfined,
          N_ ("Run the assistant's commands without the second wall inside the VM (seccomp "
              "filter, Landlock), for a program that needs a system call it refuses"),
          NULL },
        { "computer", 0, 0, G_OPTION_ARG_NONE, &opt_computer,
          N_ ("Let the assistant see and use the VM's screen (a VM made with vm create "
              "--screen): screenshots, clicks, typing"),
          NULL },
        /* Tests: with --local, a folder that stands in for a VM's (its logs, its policy). */
        { "vm-dir", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_FILENAME, &opt_vm_dir,
          "With --local: use DIR as the VM folder (tests only)", "DIR" },
        { G_OPTION_REMAINING, 0, 0, G_OPTION_ARG_STRING_ARRAY, &opt_rest, NULL,
          N_ ("VM|--local \"TASK\"") },
        { NULL }
};

typedef struct {
        CorralVmManager *manager;
        CorralAgentClient *client;
        CorralMcpManager *mcp;
        GPid agent_pid;
        CorralAssistantSession *session;
        GCancellable *cancellable;
        GAsyncResult *result;
        gboolean at_line_start;
        /* the approval being asked on the terminal */
        CorralAssistantApproval *asking;
        GString *answer;
        guint stdin_id;
} Assistant;

/* Output ---------------------------------------------------------------------------------------- */

static void
put (Assistant *a, const char *text)
{
        g_autofree char *safe = assistant_text_for_terminal (text);
        gsize len = strlen (safe);

        if (len == 0)
                return;
        fputs (safe, stdout);
        fflush (stdout);
        a->at_line_start = safe[len - 1] == '\n';
}

static void
newline (Assistant *a)
{
        if (!a->at_line_start)
                put (a, "\n");
}

static void
on_text (CorralAssistantSession *session, const char *text, Assistant *a)
{
        put (a, text);
}

static void
on_restarted (CorralAssistantSession *session, Assistant *a)
{
        newline (a);
        put (a, _ ("[the provider failed; trying again]\n"));
}

static void
on_notice (CorralAssistantSession *session, const char *text, Assistant *a)
{
        g_autofree char *line = g_strdup_printf ("[%s]\n", text);

        newline (a);
        put (a, line);
}

static void
on_tool_started (CorralAssistantSession *session, CorralAssistantToolCard *card, Assistant *a)
{
        g_autofree char *line = g_strdup_printf ("▸ %s: %s\n", card->tool, card->title);

        newline (a);
        put (a, line);
}

static void
on_tool_finished (CorralAssistantSession *session, CorralAssistantToolCard *card, Assistant *a)
{
        g_autofree char *first = g_strndup (card->output, strcspn (card->output, "\n"));
        g_autofree char *line = NULL;

        if (card->command)
                line = g_strdup_printf (_ ("  %s (%u lines of output)\n"),
                                        card->timed_out         ? _ ("timed out")
                                        : card->term_signal > 0 ? _ ("killed")
                                        : card->exit_code == 0  ? _ ("done")
                                                                : _ ("failed"),
                                        assistant_text_count_lines (card->output));
        else
                line = g_strdup_printf ("  %s%s\n", card->is_error ? _ ("error: ") : "", first);
        put (a, line);
        for (guint i = 0; i < card->blocked->len; i++) {
                g_autofree char *b = g_strdup_printf ("  ✗ %s\n", (char *) card->blocked->pdata[i]);
                put (a, b);
        }
}

/* Approvals -------------------------------------------------------------------------------------- */

static void
answer (Assistant *a, CorralAssistantAnswer ans)
{
        g_autoptr (CorralAssistantApproval) approval = g_steal_pointer (&a->asking);

        if (a->stdin_id)
                g_source_remove (a->stdin_id);
        a->stdin_id = 0;
        put (a, ans == CORRAL_ASSISTANT_ANSWER_DENY ? _ ("  denied\n") : _ ("  allowed\n"));
        corral_assistant_approval_respond (approval, ans);
}

static CorralAssistantAnswer
parse_answer (CorralAssistantApproval *approval, const char *line)
{
        g_autofree char *s = g_ascii_strdown (g_strstrip (g_strdup (line)), -1);

        if (corral_assistant_approval_get_kind (approval) == CORRAL_ASSISTANT_APPROVAL_DELETE)
                return g_str_equal (s, "y") || g_str_equal (s, "yes")
                               ? CORRAL_ASSISTANT_ANSWER_ALLOW_ONCE
                               : CORRAL_ASSISTANT_ANSWER_DENY;
        if (g_str_equal (s, "t") || g_str_equal (s, "task"))
                return CORRAL_ASSISTANT_ANSWER_ALLOW_TASK;
        if (g_str_equal (s, "a") || g_str_equal (s, "always"))
                return CORRAL_ASSISTANT_ANSWER_ALLOW_ALWAYS;
        return CORRAL_ASSISTANT_ANSWER_DENY;
}

static gboolean
on_stdin (int fd, GIOCondition cond, gpointer user_data)
{
        Assistant *a = user_data;
        char buf[256];
        gssize n = read (fd, buf, sizeof buf);
        char *nl;

        if (n <= 0) {
                a->stdin_id = 0;
                answer (a, CORRAL_ASSISTANT_ANSWER_DENY);
                return G_SOURCE_REMOVE;
        }
        g_string_append_len (a->answer, buf, n);
        if (!(nl = strchr (a->answer->str, '\n')) && a->answer->len < 1024)
                return G_SOURCE_CONTINUE;
        if (nl)
                *nl = '\0';
        a->stdin_id = 0;
        answer (a, parse_answer (a->asking, a->answer->str));
        return G_SOURCE_REMOVE;
}

static const char *
mode_words (FsMode mode)
{
        switch (mode) {
        case FS_MODE_RO:
                return _ ("can read");
        case FS_MODE_RW:
                return _ ("can edit");
        case FS_MODE_RW_NODELETE:
        default:
                return _ ("can edit, but not delete");
        }
}

/* The question, every part of it that the model or the guest chose already escaped by the
 * approval (one line each), so that nothing in it can draw a line of its own. */
static char *
delete_question (CorralAssistantApproval *approval)
{
        const char *path = corral_assistant_approval_get_path (approval);
        g_autofree char *what = NULL, *where = NULL, *host_path = NULL, *because = NULL;

        switch (corral_assistant_approval_get_file_type (approval)) {
        case G_FILE_TYPE_DIRECTORY:
                what = g_strdup_printf (_ ("The assistant asks to delete the empty folder %s\n"),
                                        path);
                break;
        case G_FILE_TYPE_SYMBOLIC_LINK:
                what = g_strdup_printf (_ ("The assistant asks to delete the link %s\n"), path);
                break;
        default:
                what = g_strdup_printf (_ ("The assistant asks to delete the file %s\n"), path);
        }
        where = g_strdup_printf (_ ("  in the shared folder “%s” (%s)\n"),
                                 corral_assistant_approval_get_share_name (approval),
                                 mode_words (corral_assistant_approval_get_share_mode (approval)));
        host_path = g_strdup_printf (_ ("  on this computer: %s/%s\n"),
                                     corral_assistant_approval_get_share_folder (approval), path);
        because = g_strdup_printf (_ ("  because: %s\n"),
                                   corral_assistant_approval_get_reason (approval));
        return g_strconcat (what, where, host_path, because, _ ("  Allow? [y/N] "), NULL);
}

static char *
network_question (CorralAssistantApproval *approval)
{
        const char *warning = corral_assistant_approval_get_warning (approval);
        g_autofree char *what = g_strdup_printf (_ ("The assistant asks to reach %s\n"),
                                                 corral_assistant_approval_get_target (approval));
        g_autofree char *caution =
                warning ? g_strdup_printf (_ ("  Warning: %s\n"), warning) : g_strdup ("");
        g_autofree char *because = g_strdup_printf (
                _ ("  because: %s\n"), corral_assistant_approval_get_reason (approval));

        return g_strconcat (what, caution, because,
                            _ ("  Allow for [t]his task, [a]lways, or [N]o? "), NULL);
}

static void
on_approval (CorralAssistantSession *session, CorralAssistantApproval *approval, Assistant *a)
{
        g_autofree char *question =
                corral_assistant_approval_get_kind (approval) == CORRAL_ASSISTANT_APPROVAL_DELETE
                        ? delete_question (approval)
                        : network_question (approval);

        newline (a);
        put (a, question);
        a->asking = corral_assistant_approval_ref (approval);
        if (opt_no || !isatty (STDIN_FILENO)) {
                put (a, opt_no ? _ ("no (--yes-to-nothing)\n")
                               : _ ("no (standard input is not a terminal)\n"));
                answer (a, CORRAL_ASSISTANT_ANSWER_DENY);
                return;
        }
        g_string_truncate (a->answer, 0);
        a->stdin_id = g_unix_fd_add (STDIN_FILENO, G_IO_IN | G_IO_HUP, on_stdin, a);
}

/* Setting up -------------------------------------------------------------------------------------- */

static char *
find_agent (void)
{
        const char *path = opt_agent ? opt_agent : corral_paths_helper (CORRAL_HELPER_AGENT);

        return g_file_test (path, G_FILE_TEST_IS_EXECUTABLE) ? g_strdup (path) : NULL;
}

static gboolean
connect_local (Assistant *a, GError **error)
{
        g_autofree char *path = find_agent ();
        const char *args[] = { "--user", g_get_user_name (), NULL };
        g_autoptr (GAsyncResult) res = NULL;
        int fd;

        if (!path) {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                                     _ ("Could not find corral-agent; set CORRAL_AGENT_PATH or "
                                        "pass --agent"));
                return FALSE;
        }
        if (!corral_agent_client_spawn_local_agent (path, args, &a->agent_pid, &fd, error))
                return FALSE;
        a->client = corral_agent_client_new ();
        corral_agent_client_connect_fd_async (a->client, fd, NULL, corralctl_got_result, &res);
        return corral_agent_client_connect_fd_finish (a->client, corralctl_wait_for (&res), error);
}

static char *
vm_dir_for (const char *vm, GError **error)
{
        g_autoptr (CorralHostSelection) sel = corral_host_select_default (error);

        return sel ? g_build_filename (sel->state_dir, "vms", vm, NULL) : NULL;
}

/* What the model is told about the VM: shares and credential names (never values). Both are
 * best effort: a session without them still works, the model just knows less. */
static void
describe_vm (Assistant *a, const char *vm, const char *vm_dir)
{
        g_autoptr (GPtrArray) shares = corral_shares_list (vm_dir, NULL);
        g_auto (GStrv) names = corral_secret_store_list_session_names_sync (NULL, NULL);

        corral_assistant_session_set_vm (a->session, vm, vm_dir);
        corral_assistant_session_set_shares (a->session, shares);
        corral_assistant_session_set_credential_names (a->session, (const char *const *) names);
}

/* The person's MCP servers, if any are configured; a server that fails is reported, not fatal. */
static void
start_mcp (Assistant *a)
{
        g_autofree char *path = corral_mcp_config_default_path ();
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralMcpConfig) config = corral_mcp_config_new_from_file (path, TRUE, &error);
        g_autoptr (GAsyncResult) res = NULL;

        if (!config) {
                g_printerr (_ ("corralctl: ignoring %s: %s\n"), path, error->message);
                return;
        }
        if (config->servers->len == 0)
                return;
        a->mcp = corral_mcp_manager_new (config);
        corral_mcp_manager_start_async (a->mcp, NULL, corralctl_got_result, &res);
        corral_mcp_manager_start_finish (a->mcp, corralctl_wait_for (&res), NULL);
        for (guint i = 0; i < config->servers->len; i++) {
                const char *name = ((CorralMcpServerConfig *) config->servers->pdata[i])->name;
                const GError *e = corral_mcp_manager_get_error (a->mcp, name);
                if (e)
                        g_printerr (_ ("corralctl: MCP server “%s”: %s\n"), name, e->message);
        }
}

static CorralLlmProvider *
make_provider (CorralLlmProviderKind *kind, GError **error)
{
        if (!opt_provider || g_str_equal (opt_provider, "anthropic"))
                *kind = CORRAL_LLM_PROVIDER_ANTHROPIC;
        else if (g_str_equal (opt_provider, "openai"))
                *kind = CORRAL_LLM_PROVIDER_OPENAI;
        else {
                g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                             _ ("--provider must be anthropic or openai, not “%s”"), opt_provider);
                return NULL;
        }
        return corral_llm_provider_new_for_kind_sync (*kind, NULL, error);
}

/* Running ----------------------------------------------------------------------------------------- */

static gboolean
on_sigint (gpointer user_data)
{
        Assistant *a = user_data;

        if (g_cancellable_is_cancelled (a->cancellable)) {
                g_printerr (_ ("\ncorralctl: interrupted again; quitting\n"));
                _exit (EXIT_INTERRUPTED);
        }
        g_printerr (_ ("\ncorralctl: stopping the task (Ctrl-C again to quit at once)\n"));
        g_cancellable_cancel (a->cancellable);
        return G_SOURCE_CONTINUE;
}

static void
on_disconnected (CorralAgentClient *client, GError *error, Assistant *a)
{
        g_printerr (_ ("corralctl: lost the connection to the agent: %s\n"), error->message);
        g_cancellable_cancel (a->cancellable);
}

static int
run_task (Assistant *a, const char *task)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralAssistantTaskResult) result = NULL;
        guint sig = g_unix_signal_add (SIGINT, on_sigint, a);
        int status;

        g_signal_connect (a->session, "text-delta", G_CALLBACK (on_text), a);
        g_signal_connect (a->session, "stream-restarted", G_CALLBACK (on_restarted), a);
        g_signal_connect (a->session, "notice", G_CALLBACK (on_notice), a);
        g_signal_connect (a->session, "tool-started", G_CALLBACK (on_tool_started), a);
        g_signal_connect (a->session, "tool-finished", G_CALLBACK (on_tool_finished), a);
        g_signal_connect (a->session, "approval-requested", G_CALLBACK (on_approval), a);
        g_signal_connect (a->client, "disconnected", G_CALLBACK (on_disconnected), a);
        corral_assistant_session_run_task_async (a->session, task, a->cancellable,
                                                 corralctl_got_result, &a->result);
        result = corral_assistant_session_run_task_finish (a->session,
                                                           corralctl_wait_for (&a->result), &error);
        g_source_remove (sig);
        g_signal_handlers_disconnect_by_data (a->client, a);
        newline (a);
        if (!result) {
                status = g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED)
                                 ? EXIT_INTERRUPTED
                                 : EXIT_CTL;
                if (g_error_matches (error, CORRAL_LLM_ERROR, CORRAL_LLM_ERROR_AUTH))
                        g_printerr (_ ("corralctl: %s Set ANTHROPIC_API_KEY / OPENAI_API_KEY, or "
                                       "store the key as the secret “anthropic” / “openai” "
                                       "(corralctl secret set).\n"),
                                    error->message);
                else if (status == EXIT_CTL)
                        g_printerr ("corralctl: %s\n", error->message);
        } else {
                status = result->stop == CORRAL_ASSISTANT_STOP_DONE ? EXIT_SUCCESS : EXIT_STOPPED;
        }
        g_printerr (_ ("Session %s (continue it with --resume %s)\n"),
                    corral_assistant_session_get_id (a->session),
                    corral_assistant_session_get_id (a->session));
        return status;
}

static void
cleanup (Assistant *a)
{
        if (a->asking)
                corral_assistant_approval_unref (a->asking);
        if (a->stdin_id)
                g_source_remove (a->stdin_id);
        g_clear_object (&a->session);
        if (a->mcp) {
                g_autoptr (GAsyncResult) res = NULL;
                corral_mcp_manager_shutdown_async (a->mcp, corralctl_got_result, &res);
                corral_mcp_manager_shutdown_finish (a->mcp, corralctl_wait_for (&res));
        }
        g_clear_object (&a->mcp);
        if (a->client)
                corral_agent_client_close (a->client);
        g_clear_object (&a->client);
        g_clear_object (&a->manager);
        g_clear_object (&a->cancellable);
        g_clear_object (&a->result);
        if (a->answer)
                g_string_free (a->answer, TRUE);
        if (a->agent_pid > 0) {
                /* The local agent exits at EOF on its socket. */
                waitpid (a->agent_pid, NULL, 0);
                g_spawn_close_pid (a->agent_pid);
        }
}

static gboolean
setup (Assistant *a, const char *vm, GError **error)
{
        g_autoptr (CorralLlmProvider) provider = NULL;
        g_autofree char *vm_dir = NULL;
        CorralLlmProviderKind kind;
        const char *model;

        if (!(provider = make_provider (&kind, error)))
                return FALSE;
        model = opt_model
                        ? opt_model
                        : (kind == CORRAL_LLM_PROVIDER_ANTHROPIC ? "claude-sonnet-4-5" : "gpt-4.1");
        if (vm ? !corralctl_vm_connect (vm, &a->manager, &a->client, error)
               : !connect_local (a, error))
                return FALSE;
        if (vm && !(vm_dir = vm_dir_for (vm, error)))
                return FALSE;
        start_mcp (a);
        a->session = opt_resume ? corral_assistant_session_resume (opt_resume, provider, a->client,
                                                                   model, error)
                                : corral_assistant_session_new (provider, a->client, model);
        if (!a->session)
                return FALSE;
        if (vm)
                describe_vm (a, vm, vm_dir);
        else if (opt_vm_dir)
                corral_assistant_session_set_vm (a->session, "local", opt_vm_dir);
        if (a->mcp)
                corral_assistant_session_set_mcp_manager (a->session, a->mcp);
        if (opt_max_steps > 0)
                corral_assistant_session_set_max_steps (a->session, (guint) opt_max_steps);
        corral_assistant_session_set_unconfined_commands (a->session, opt_unconfined);
        if (opt_computer) {
                g_autoptr (CorralComputer) computer = NULL;

                /* The person turned it on; the organisation may have turned it off. */
                if (!vm) {
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                             _ ("--computer needs a VM with a screen, not "
                                                "--local"));
                        return FALSE;
                }
                if (!corral_task_check_computer_use (error) ||
                    !(computer = corralctl_computer_open (vm, vm_dir, error)))
                        return FALSE;
                corral_assistant_session_set_computer (a->session, computer);
        }
        return TRUE;
}

int
corralctl_assistant_main (int argc, char **argv)
{
        g_autoptr (GOptionContext) context = g_option_context_new (NULL);
        g_autoptr (GError) error = NULL;
        Assistant a = { .at_line_start = TRUE };
        const char *vm = NULL, *task;
        guint n_rest;
        int status;

        g_option_context_set_summary (
                context, _ ("Give a task to the AI assistant, which works inside a VM.\nKeys: "
                            "ANTHROPIC_API_KEY / OPENAI_API_KEY (and *_BASE_URL), or the "
                            "keychain secret “anthropic” / “openai”."));
        g_option_context_add_main_entries (context, entries, NULL);
        if (!g_option_context_parse (context, &argc, &argv, &error)) {
                g_printerr ("corralctl: %s\n", error->message);
                return EXIT_CTL;
        }
        n_rest = opt_rest ? g_strv_length (opt_rest) : 0;
        if (n_rest != (opt_local ? 1u : 2u) || opt_max_steps < 0) {
                g_printerr (_ ("corralctl: usage: corralctl assistant VM \"TASK\" [OPTION…]\n"
                               "       corralctl assistant --local \"TASK\" [OPTION…]\n"));
                return EXIT_CTL;
        }
        vm = opt_local ? NULL : opt_rest[0];
        task = opt_rest[n_rest - 1];
        if (opt_local)
                g_printerr (
                        _ ("corralctl: --local: the assistant's commands run on this machine as "
                           "you, with NO sandbox\n"));
        a.cancellable = g_cancellable_new ();
        a.answer = g_string_new (NULL);
        if (!setup (&a, vm, &error)) {
                g_printerr ("corralctl: %s\n", error->message);
                cleanup (&a);
                return EXIT_CTL;
        }
        status = run_task (&a, task);
        cleanup (&a);
        return status;
}
