/* test-agent-exec.c — processes through the real corral-agent, started locally.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-util.h"

#include <arpa/inet.h>
#include <glib/gstdio.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
        TestAgent *agent;
        CorralAgentClient *client;
} Fixture;

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
        fx->agent = test_agent_start (0, NULL);
        fx->client = fx->agent->client;
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
        g_clear_pointer (&fx->agent, test_agent_free);
}

static CorralRunResult *
run_shell (Fixture *fx, const char *script)
{
        const char *argv[] = { "/bin/sh", "-c", script, NULL };

        return test_run_argv (fx->client, argv);
}

static void
assert_stdout (CorralRunResult *res, const char *expected)
{
        g_assert_cmpmem (g_bytes_get_data (res->stdout_data, NULL),
                         g_bytes_get_size (res->stdout_data), expected, strlen (expected));
}

static void
test_exit_codes (Fixture *fx, gconstpointer data)
{
        const int codes[] = { 0, 1, 3, 42, 255 };

        for (gsize i = 0; i < G_N_ELEMENTS (codes); i++) {
                g_autofree char *script = g_strdup_printf ("exit %d", codes[i]);
                g_autoptr (CorralRunResult) res = run_shell (fx, script);

                g_assert_cmpint (res->exit_code, ==, codes[i]);
                g_assert_cmpint (res->term_signal, ==, 0);
                g_assert_false (res->timed_out);
        }
}

static void
test_stdout_stderr (Fixture *fx, gconstpointer data)
{
        g_autoptr (CorralRunResult) res = run_shell (fx, "echo out; echo err >&2; echo out2");

        assert_stdout (res, "out\nout2\n");
        g_assert_cmpmem (g_bytes_get_data (res->stderr_data, NULL),
                         g_bytes_get_size (res->stderr_data), "err\n", 4);
        g_assert_false (res->truncated);
}

static void
test_signal (Fixture *fx, gconstpointer data)
{
        g_autoptr (CorralRunResult) res = run_shell (fx, "kill -TERM $$; sleep 5");

        g_assert_cmpint (res->term_signal, ==, SIGTERM);
        g_assert_cmpint (res->exit_code, ==, -1);
}

/* Commands start with every signal at its default and none blocked, whatever the agent ignores
 * (SIGPIPE) or inherited ignored (SIGUSR2, set in main) and blocks (its signalfd set). */
static void
test_signal_defaults (Fixture *fx, gconstpointer data)
{
        g_autoptr (CorralRunResult) res =
                run_shell (fx, "exec grep -E '^Sig(Blk|Ign)' /proc/self/status");

        assert_stdout (res, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

static void
test_timeout (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "sleep", "30", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralRunResult) res = NULL;
        g_autoptr (GError) error = NULL;
        gint64 start = g_get_monotonic_time ();

        corral_exec_spec_set_timeout_ms (spec, 300);
        res = test_run (fx->client, spec, 1024, &error);
        g_assert_no_error (error);
        g_assert_true (res->timed_out);
        g_assert_cmpint (res->exit_code, ==, -1);
        g_assert_cmpint (res->term_signal, >, 0);
        g_assert_cmpint (g_get_monotonic_time () - start, <, 20 * G_USEC_PER_SEC);
}

static void
test_kill (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "sleep", "30", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GError) error = NULL;

        proc = test_spawn (fx->client, spec, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (corral_process_get_id (proc), >, 0);
        g_assert_cmpint (corral_process_get_pid (proc), >, 0);
        corral_process_kill (proc, SIGUSR1);
        g_assert_true (test_process_wait (proc, &error));
        g_assert_no_error (error);
        g_assert_true (corral_process_get_exited (proc));
        g_assert_cmpint (corral_process_get_term_signal (proc), ==, SIGUSR1);
        g_assert_false (corral_process_get_timed_out (proc));
}

static void
write_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        g_autoptr (GError) error = NULL;

        g_assert_true (corral_process_write_finish (CORRAL_PROCESS (source), result, &error));
        g_assert_no_error (error);
        *(gboolean *) user_data = TRUE;
}

/* More than a window each way: credit must flow in both directions. */
static void
test_stdin_round_trip (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "cat", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) input = NULL;
        gsize size = 3 * 1024 * 1024 + 17;
        guint8 *buf = g_malloc (size);
        TestOutput output = { 0 };
        gboolean written = FALSE;

        for (gsize i = 0; i < size; i++)
                buf[i] = (guint8) g_test_rand_int_range (0, 256);
        input = g_bytes_new_take (buf, size);
        corral_exec_spec_set_stdin (spec, TRUE);
        proc = test_spawn (fx->client, spec, &error);
        g_assert_no_error (error);
        test_output_connect (proc, &output);
        corral_process_write_async (proc, input, NULL, write_done, &written);
        corral_process_close_stdin (proc);
        g_assert_true (test_process_wait (proc, &error));
        g_assert_true (written);
        g_assert_cmpint (corral_process_get_exit_code (proc), ==, 0);
        g_assert_cmpmem (output.out->str, output.out->len, g_bytes_get_data (input, NULL), size);
        test_output_clear (&output);
}

static void
test_env_cwd (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "/bin/sh", "-c", "printf '%s|%s|' \"$FOO\" \"$EMPTY\"; pwd", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralRunResult) res = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp ("corral-cwd-XXXXXX", &error);
        g_autofree char *expected = NULL;

        g_assert_no_error (error);
        corral_exec_spec_set_env (spec, "FOO", "a b\"c'$HOME\n;");
        corral_exec_spec_set_env (spec, "EMPTY", "");
        corral_exec_spec_set_cwd (spec, dir);
        res = test_run (fx->client, spec, 4096, &error);
        g_assert_no_error (error);
        g_assert_cmpint (res->exit_code, ==, 0);
        expected = g_strdup_printf ("a b\"c'$HOME\n;||%s\n", dir);
        assert_stdout (res, expected);
        g_rmdir (dir);
}

static void
test_bad_spec_refused (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "true", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralRunResult) res = NULL;
        g_autoptr (GError) error = NULL;

        corral_exec_spec_set_env (spec, "A=B", "x");
        res = test_run (fx->client, spec, 4096, &error);
        g_assert_null (res);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INVALID_REQUEST);
        g_clear_error (&error);
        g_clear_pointer (&spec, corral_exec_spec_unref);

        spec = corral_exec_spec_new_shell ("echo \xff\xfe");
        res = test_run (fx->client, spec, 4096, &error);
        g_assert_null (res);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_INVALID_REQUEST);
}

static void
test_missing_program (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "/nonexistent/program", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralRunResult) res = NULL;
        g_autoptr (GError) error = NULL;

        res = test_run (fx->client, spec, 4096, &error);
        /* Either refused up front or reported as exit status 127, never success. */
        if (res)
                g_assert_cmpint (res->exit_code, ==, 127);
        else
                g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_NOT_FOUND);
}

static void
test_truncated_output (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "head", "-c", "1000000", "/dev/zero", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralRunResult) res = NULL;
        g_autoptr (GError) error = NULL;

        res = test_run (fx->client, spec, 1000, &error);
        g_assert_no_error (error);
        g_assert_cmpint (res->exit_code, ==, 0);
        g_assert_cmpuint (g_bytes_get_size (res->stdout_data), ==, 1000);
        g_assert_true (res->truncated);
        g_assert_cmpuint (res->stdout_total, ==, 1000000);
}

typedef struct {
        guint done;
        guint ok;
} Concurrent;

typedef struct {
        Concurrent *c;
        char *expected;
} OneRun;

static void
concurrent_done (GObject *source, GAsyncResult *result, gpointer user_data)
{
        OneRun *run = user_data;
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralRunResult) res = NULL;
        gsize len = strlen (run->expected);

        res = corral_agent_client_run_finish (CORRAL_AGENT_CLIENT (source), result, &error);
        g_assert_no_error (error);
        run->c->done++;
        if (res->exit_code == 0 && g_bytes_get_size (res->stdout_data) == len &&
            memcmp (g_bytes_get_data (res->stdout_data, NULL), run->expected, len) == 0)
                run->c->ok++;
        g_free (run->expected);
        g_free (run);
}

static void
test_concurrent (Fixture *fx, gconstpointer data)
{
        Concurrent c = { 0 };

        for (guint i = 0; i < 100; i++) {
                g_autofree char *arg = g_strdup_printf ("%u", i * 7919);
                const char *argv[] = { "/bin/sh", "-c", "sleep 0.2; echo $0", arg, NULL };
                g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
                OneRun *run = g_new0 (OneRun, 1);

                run->c = &c;
                run->expected = g_strdup_printf ("%s\n", arg);
                corral_agent_client_run_async (fx->client, spec, 1024, NULL, concurrent_done, run);
        }
        while (c.done < 100)
                g_main_context_iteration (NULL, TRUE);
        g_assert_cmpuint (c.ok, ==, 100);
}

/* PTY and background processes ----------------------------------------------------------------- */

static void
wait_output (TestOutput *output, const char *needle)
{
        gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

        while (!strstr (output->out->str, needle)) {
                if (g_get_monotonic_time () > deadline)
                        g_error ("no “%s” in output “%s”", needle, output->out->str);
                g_main_context_iteration (NULL, TRUE);
        }
}

static void
test_pty_resize (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "/bin/sh", "-c", "stty size; read x; stty size; tty", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) line = g_bytes_new_static ("\n", 1);
        TestOutput output = { 0 };

        corral_exec_spec_set_pty (spec, 24, 80);
        corral_exec_spec_set_stdin (spec, TRUE);
        proc = test_spawn (fx->client, spec, &error);
        g_assert_no_error (error);
        test_output_connect (proc, &output);
        wait_output (&output, "24 80");
        corral_process_resize (proc, 40, 123);
        corral_process_write_async (proc, line, NULL, NULL, NULL);
        g_assert_true (test_process_wait (proc, &error));
        g_assert_cmpint (corral_process_get_exit_code (proc), ==, 0);
        g_assert_nonnull (strstr (output.out->str, "40 123"));
        g_assert_nonnull (strstr (output.out->str, "/dev/pts/"));
        g_assert_cmpuint (output.err->len, ==, 0);
        test_output_clear (&output);
}

static CorralProcess *
attach (CorralAgentClient *client, guint64 proc_id)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        GAsyncResult *slot = NULL;
        CorralProcess *proc;

        corral_agent_client_attach_async (client, proc_id, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        proc = corral_agent_client_attach_finish (client, result, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (corral_process_get_id (proc), ==, proc_id);
        return proc;
}

static void
test_background_reattach (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "/bin/sh", "-c", "echo first; read x; echo second; sleep 30", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (CorralProcess) again = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) line = g_bytes_new_static ("\n", 1);
        TestOutput output = { 0 }, replay = { 0 };
        guint64 id;

        corral_exec_spec_set_background (spec, TRUE);
        corral_exec_spec_set_pty (spec, 24, 80);
        corral_exec_spec_set_stdin (spec, TRUE);
        proc = test_spawn (fx->client, spec, &error);
        g_assert_no_error (error);
        id = corral_process_get_id (proc);
        test_output_connect (proc, &output);
        wait_output (&output, "first");
        corral_process_detach (proc);
        g_assert_false (test_process_wait (proc, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
        g_clear_error (&error);

        /* The ring buffer replays what was printed, then output is live again. */
        again = attach (fx->client, id);
        test_output_connect (again, &replay);
        wait_output (&replay, "first");
        corral_process_write_async (again, line, NULL, NULL, NULL);
        wait_output (&replay, "second");
        g_assert_null (strstr (output.out->str, "second"));
        corral_process_kill (again, SIGKILL);
        g_assert_true (test_process_wait (again, &error));
        g_assert_cmpint (corral_process_get_term_signal (again), ==, SIGKILL);
        test_output_clear (&output);
        test_output_clear (&replay);
}

/* Waits -------------------------------------------------------------------------------------- */

static void
test_wait_log (Fixture *fx, gconstpointer data)
{
        const char *argv[] = { "/bin/sh", "-c",
                               "echo starting; sleep 0.3; echo 'server ready on 8080'; sleep 30",
                               NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autofree char *line = NULL;
        GAsyncResult *slot = NULL;

        corral_exec_spec_set_background (spec, TRUE);
        proc = test_spawn (fx->client, spec, &error);
        g_assert_no_error (error);
        corral_agent_client_wait_log_async (fx->client, corral_process_get_id (proc),
                                            "ready on [0-9]+", 20000, NULL, test_store_result,
                                            &slot);
        result = test_wait_result (&slot);
        line = corral_agent_client_wait_log_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (line, ==, "server ready on 8080");
        g_clear_object (&result);

        corral_agent_client_wait_log_async (fx->client, corral_process_get_id (proc), "never", 200,
                                            NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        g_clear_pointer (&line, g_free);
        line = corral_agent_client_wait_log_finish (fx->client, result, &error);
        g_assert_null (line);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TIMEOUT);
        corral_process_kill (proc, SIGKILL);
        g_clear_error (&error);
        g_assert_true (test_process_wait (proc, &error));
}

static guint16
free_port (void)
{
        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
        socklen_t len = sizeof addr;
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        g_assert_cmpint (bind (fd, (struct sockaddr *) &addr, sizeof addr), ==, 0);
        g_assert_cmpint (getsockname (fd, (struct sockaddr *) &addr, &len), ==, 0);
        close (fd);
        return ntohs (addr.sin_port);
}

static gboolean
start_listener (gpointer user_data)
{
        int *fd = user_data;
        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
        int one = 1;

        addr.sin_port = htons ((guint16) *fd);
        *fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        setsockopt (*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        g_assert_cmpint (bind (*fd, (struct sockaddr *) &addr, sizeof addr), ==, 0);
        g_assert_cmpint (listen (*fd, 8), ==, 0);
        return G_SOURCE_REMOVE;
}

static void
test_wait_port (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        GAsyncResult *slot = NULL;
        guint16 port = free_port ();
        int listener = port;

        corral_agent_client_wait_port_async (fx->client, "127.0.0.1", port, 200, NULL,
                                             test_store_result, &slot);
        result = test_wait_result (&slot);
        g_assert_false (corral_agent_client_op_finish (fx->client, result, &error));
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_TIMEOUT);
        g_clear_error (&error);
        g_clear_object (&result);

        corral_agent_client_wait_port_async (fx->client, "127.0.0.1", port, 20000, NULL,
                                             test_store_result, &slot);
        g_timeout_add (400, start_listener, &listener);
        result = test_wait_result (&slot);
        g_assert_true (corral_agent_client_op_finish (fx->client, result, &error));
        g_assert_no_error (error);
        g_assert_cmpint (listener, !=, port);
        close (listener);
}

static void
test_info (Fixture *fx, gconstpointer data)
{
        g_autoptr (GAsyncResult) result = NULL;
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) info = NULL;
        GAsyncResult *slot = NULL;
        const char *kernel = NULL;
        int64_t mem;

        corral_agent_client_info_async (fx->client, NULL, test_store_result, &slot);
        result = test_wait_result (&slot);
        info = corral_agent_client_info_finish (fx->client, result, &error);
        g_assert_no_error (error);
        g_assert_cmpint (proto_json_get_string (info, "kernel", 0, &kernel), ==, 0);
        g_assert_cmpint (proto_json_get_int (info, "mem_total", 1, (int64_t) PROTO_MAX_ID, &mem),
                         ==, 0);
        g_assert_nonnull (corral_agent_client_get_agent_version (fx->client));
        g_assert_cmpuint (strlen (corral_agent_client_get_boot_id (fx->client)), ==, 32);
        g_assert_cmpuint (corral_agent_client_get_window (fx->client), >=, 4096);
}

static void
test_unknown_method (Fixture *fx, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) reply = test_call (fx->client, "no.such.method", NULL, &error);

        g_assert_null (reply);
        g_assert_error (error, CORRAL_AGENT_ERROR, CORRAL_AGENT_ERROR_UNKNOWN_METHOD);
        g_assert_true (corral_agent_client_get_connected (fx->client));
}

/* The network proxy's variables reach every command, never replace the base environment, and
 * only count from a file no command could have written (SECURITY.md N14). */
static void
test_net_env (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corral-net-env-XXXXXX", NULL);
        g_autofree char *file = g_build_filename (dir, "net.env", NULL);
        const char *args[] = { "--net-env", file, NULL };
        const char *argv[] = { "/bin/sh", "-c", "env", NULL };
        const char *contents = "HTTP_PROXY=http://corral:0123456789abcdef@127.0.0.1:1023\n"
                               "PATH=/evil\n"
                               "API_TOKEN=corral-ph-0123456789abcdef0123456789abcdef\n"
                               "bad key=x\n"
                               "no-equals-sign\n";
        g_autoptr (TestAgent) agent = NULL;

        g_assert_true (g_file_set_contents_full (file, contents, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                                 0644, NULL));
        agent = test_agent_start (0, args);
        {
                g_autoptr (CorralRunResult) res = test_run_argv (agent->client, argv);
                g_autofree char *out = g_strndup (g_bytes_get_data (res->stdout_data, NULL),
                                                  g_bytes_get_size (res->stdout_data));

                g_assert_nonnull (strstr (out, "\nHTTP_PROXY=http://corral:0123456789abcdef@"));
                g_assert_nonnull (strstr (out, "API_TOKEN=corral-ph-0123456789abcdef"));
                g_assert_null (strstr (out, "PATH=/evil"));
                g_assert_null (strstr (out, "bad key"));
                g_assert_null (strstr (out, "no-equals-sign"));
        }
        /* Writable by others: a command could have planted it; ignored entirely. */
        g_assert_cmpint (g_chmod (file, 0666), ==, 0);
        {
                g_autoptr (CorralRunResult) res = test_run_argv (agent->client, argv);
                g_autofree char *out = g_strndup (g_bytes_get_data (res->stdout_data, NULL),
                                                  g_bytes_get_size (res->stdout_data));

                g_assert_null (strstr (out, "HTTP_PROXY"));
                g_assert_null (strstr (out, "API_TOKEN"));
        }
        g_assert_cmpint (g_unlink (file), ==, 0);
        g_assert_cmpint (g_rmdir (dir), ==, 0);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

        /* Inherited by every agent started here: their commands must not inherit it. */
        signal (SIGUSR2, SIG_IGN);
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
        ADD ("/agent-exec/exit-codes", test_exit_codes);
        ADD ("/agent-exec/stdout-stderr", test_stdout_stderr);
        ADD ("/agent-exec/signal", test_signal);
        ADD ("/agent-exec/signal-defaults", test_signal_defaults);
        ADD ("/agent-exec/timeout", test_timeout);
        ADD ("/agent-exec/kill", test_kill);
        ADD ("/agent-exec/stdin-round-trip", test_stdin_round_trip);
        ADD ("/agent-exec/env-cwd", test_env_cwd);
        ADD ("/agent-exec/bad-spec-refused", test_bad_spec_refused);
        ADD ("/agent-exec/missing-program", test_missing_program);
        ADD ("/agent-exec/truncated-output", test_truncated_output);
        ADD ("/agent-exec/concurrent-100", test_concurrent);
        ADD ("/agent-exec/pty-resize", test_pty_resize);
        ADD ("/agent-exec/background-reattach", test_background_reattach);
        ADD ("/agent-exec/wait-log", test_wait_log);
        ADD ("/agent-exec/wait-port", test_wait_port);
        ADD ("/agent-exec/info", test_info);
        ADD ("/agent-exec/unknown-method", test_unknown_method);
#undef ADD
        g_test_add_func ("/agent-exec/net-env", test_net_env);

        return g_test_run ();
}
