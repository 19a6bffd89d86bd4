/* test-corralctl.c — the corralctl command line, with --local agents, and with a VM's folder
 * whose agent socket a local agent serves (no VM, no libvirt).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* corralctl's grace between a forwarded SIGTERM and the kill (TERM_GRACE_MS). */
#define TERM_GRACE_S 5.0

typedef struct {
        int status;
        char *out;
        char *err;
} Ctl;

static void
ctl_clear (Ctl *ctl)
{
        g_free (ctl->out);
        g_free (ctl->err);
}

static char *
corralctl_path (void)
{
        const char *build = g_getenv ("CORRAL_BUILD_DIR");

        g_assert_nonnull (build);
        return g_build_filename (build, "app", "corralctl", NULL);
}

static char *
bytes_to_string (GBytes *bytes)
{
        gsize len;
        const char *data = g_bytes_get_data (bytes, &len);

        return len ? g_strndup (data, len) : g_strdup ("");
}

/* KEY=VALUE pairs (NULL-terminated) that run_ctl() adds to corralctl's environment. */
static const char *const *ctl_env;

/* Runs corralctl with args (NULL-terminated) and optional stdin text. */
static Ctl
run_ctl (const char *stdin_text, const char *agent_override, ...)
{
        g_autoptr (GSubprocessLauncher) launcher = NULL;
        g_autoptr (GSubprocess) proc = NULL;
        g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GError) error = NULL;
        g_autoptr (GBytes) out = NULL;
        g_autoptr (GBytes) err = NULL;
        g_autoptr (GBytes) in = NULL;
        Ctl ctl = { 0 };
        const char *arg;
        va_list ap;

        g_ptr_array_add (argv, corralctl_path ());
        va_start (ap, agent_override);
        while ((arg = va_arg (ap, const char *)))
                g_ptr_array_add (argv, g_strdup (arg));
        va_end (ap);
        g_ptr_array_add (argv, NULL);

        launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDIN_PIPE |
                                              G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                              G_SUBPROCESS_FLAGS_STDERR_PIPE);
        if (agent_override)
                g_subprocess_launcher_setenv (launcher, "CORRAL_AGENT_PATH", agent_override, TRUE);
        for (const char *const *e = ctl_env; e && *e; e++) {
                g_auto (GStrv) kv = g_strsplit (*e, "=", 2);

                g_subprocess_launcher_setenv (launcher, kv[0], kv[1], TRUE);
        }
        proc = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
        g_assert_no_error (error);
        in = g_bytes_new (stdin_text ? stdin_text : "", stdin_text ? strlen (stdin_text) : 0);
        g_assert_true (g_subprocess_communicate (proc, in, NULL, &out, &err, &error));
        g_assert_no_error (error);
        g_assert_true (g_subprocess_get_if_exited (proc));
        ctl.status = g_subprocess_get_exit_status (proc);
        ctl.out = bytes_to_string (out);
        ctl.err = bytes_to_string (err);
        return ctl;
}

static void
test_version_help (void)
{
        Ctl v = run_ctl (NULL, NULL, "--version", NULL);
        Ctl h = run_ctl (NULL, NULL, "exec", "--help", NULL);
        Ctl none = run_ctl (NULL, NULL, NULL);

        g_assert_cmpint (v.status, ==, 0);
        g_assert_true (g_str_has_prefix (v.out, "corralctl "));
        g_assert_cmpint (h.status, ==, 0);
        g_assert_nonnull (strstr (h.out, "--local"));
        g_assert_nonnull (strstr (h.out, "no isolation"));
        g_assert_cmpint (none.status, ==, 125);
        /* The assistant's command, under its name and under its first one. */
        g_assert_nonnull (strstr (none.err, "  assistant "));
        ctl_clear (&v);
        ctl_clear (&h);
        ctl_clear (&none);
        for (gsize i = 0; i < 2; i++) {
                Ctl a = run_ctl (NULL, NULL, i ? "agent" : "assistant", "--help", NULL);

                g_assert_cmpint (a.status, ==, 0);
                g_assert_nonnull (strstr (a.out, "AI assistant"));
                ctl_clear (&a);
        }
}

static void
test_exit_status (void)
{
        Ctl ok = run_ctl (NULL, NULL, "exec", "--local", "--", "sh", "-c", "echo out; echo err >&2",
                          NULL);
        Ctl three = run_ctl (NULL, NULL, "exec", "--local", "--", "sh", "-c", "exit 3", NULL);
        Ctl killed = run_ctl (NULL, NULL, "exec", "--local", "--", "sh", "-c", "kill -9 $$", NULL);

        g_assert_cmpint (ok.status, ==, 0);
        g_assert_cmpstr (ok.out, ==, "out\n");
        g_assert_cmpstr (ok.err, ==, "err\n");
        g_assert_cmpint (three.status, ==, 3);
        g_assert_cmpint (killed.status, ==, 128 + 9);
        ctl_clear (&ok);
        ctl_clear (&three);
        ctl_clear (&killed);
}

static void
test_env_cwd_stdin (void)
{
        Ctl env = run_ctl (NULL, NULL, "exec", "--local", "--env", "A=x y", "-e", "B=", "--cwd",
                           "/", "--", "sh", "-c", "echo \"$A|$B\"; pwd", NULL);
        Ctl cat =
                run_ctl ("line one\nline two\n", NULL, "exec", "--local", "-i", "--", "cat", NULL);
        Ctl no_i = run_ctl ("ignored\n", NULL, "exec", "--local", "--", "cat", NULL);

        g_assert_cmpint (env.status, ==, 0);
        g_assert_cmpstr (env.out, ==, "x y|\n/\n");
        g_assert_cmpint (cat.status, ==, 0);
        g_assert_cmpstr (cat.out, ==, "line one\nline two\n");
        g_assert_cmpint (no_i.status, ==, 0);
        g_assert_cmpstr (no_i.out, ==, "");
        ctl_clear (&env);
        ctl_clear (&cat);
        ctl_clear (&no_i);
}

static void
test_timeout (void)
{
        Ctl t = run_ctl (NULL, NULL, "exec", "--local", "--timeout", "0.3", "--", "sleep", "30",
                         NULL);

        g_assert_cmpint (t.status, ==, 124);
        g_assert_nonnull (strstr (t.err, "timed out"));
        ctl_clear (&t);
}

static void
test_errors (void)
{
        Ctl missing =
                run_ctl (NULL, "/nonexistent/corral-agent", "exec", "--local", "--", "true", NULL);
        Ctl no_local = run_ctl (NULL, NULL, "exec", "--", "true", NULL);
        Ctl no_cmd = run_ctl (NULL, NULL, "exec", "--local", NULL);
        Ctl bad_env =
                run_ctl (NULL, NULL, "exec", "--local", "--env", "novalue", "--", "true", NULL);
        Ctl unknown = run_ctl (NULL, NULL, "frobnicate", NULL);

        g_assert_cmpint (missing.status, ==, 125);
        g_assert_nonnull (strstr (missing.err, "/nonexistent/corral-agent"));
        g_assert_cmpint (no_local.status, ==, 125);
        g_assert_nonnull (strstr (no_local.err, "--local"));
        g_assert_cmpint (no_cmd.status, ==, 125);
        g_assert_cmpint (bad_env.status, ==, 125);
        g_assert_nonnull (strstr (bad_env.err, "KEY=VALUE"));
        g_assert_cmpint (unknown.status, ==, 125);
        ctl_clear (&missing);
        ctl_clear (&no_local);
        ctl_clear (&no_cmd);
        ctl_clear (&bad_env);
        ctl_clear (&unknown);
}

static void
test_info (void)
{
        Ctl info = run_ctl (NULL, NULL, "info", "--local", NULL);

        g_assert_cmpint (info.status, ==, 0);
        g_assert_nonnull (strstr (info.out, "\"kernel\""));
        g_assert_nonnull (strstr (info.out, "no isolation"));
        ctl_clear (&info);
}

/* Refused system calls are named to the person with the way out (SECURITY.md A7, A10); with
 * --unconfined nothing is refused. The exit status stays the command's. */
static void
test_refused_calls_said (void)
{
        g_autofree char *probe =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "tests", "confine-probe", NULL);
        Ctl conf = run_ctl (NULL, NULL, "exec", "--local", "--", probe, NULL);
        Ctl free_run = run_ctl (NULL, NULL, "exec", "--local", "--unconfined", "--", probe, NULL);

        g_assert_cmpint (conf.status, ==, 0);
        g_assert_nonnull (strstr (conf.out, "keyctl EPERM"));
        g_assert_nonnull (strstr (conf.err, "the sandbox refused system calls the command made: "
                                            "bpf, "));
        g_assert_nonnull (strstr (conf.err, "--unconfined"));
        g_assert_cmpint (free_run.status, ==, 0);
        g_assert_nonnull (strstr (free_run.out, "keyctl ok"));
        g_assert_null (strstr (free_run.err, "refused"));
        ctl_clear (&conf);
        ctl_clear (&free_run);
}

/* Not a terminal here, so the PTY gets the default 24x80. */
static void
test_shell_pty (void)
{
        Ctl sh = run_ctl ("", NULL, "shell", "--local", "--", "sh", "-c", "stty size; tty", NULL);

        g_assert_cmpint (sh.status, ==, 0);
        g_assert_nonnull (strstr (sh.out, "24 80"));
        g_assert_nonnull (strstr (sh.out, "/dev/pts/"));
        ctl_clear (&sh);
}

/* Stopping a command, as with ssh and systemd-run ------------------------------------------- */

/* A child_setup: what the test starts ends with it, also when an assertion stops it. */
static void
die_with_test (gpointer user_data)
{
        prctl (PR_SET_PDEATHSIG, SIGKILL);
}

static gboolean
pid_gone (GPid pid, double seconds)
{
        for (int i = 0; i < seconds * 20; i++) {
                if (kill (pid, 0) < 0 && errno == ESRCH)
                        return TRUE;
                g_usleep (50000);
        }
        return FALSE;
}

/* Reads from fd into out until needle appears, for at most seconds. */
static gboolean
read_until (int fd, GString *out, const char *needle, double seconds)
{
        gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);

        while (!strstr (out->str, needle)) {
                struct pollfd p = { .fd = fd, .events = POLLIN };
                char buf[512];
                gssize n;
                int left = (int) ((end - g_get_monotonic_time ()) / 1000);

                if (left <= 0 || poll (&p, 1, left) <= 0)
                        return FALSE;
                n = read (fd, buf, sizeof buf);
                if (n <= 0)
                        return FALSE;
                g_string_append_len (out, buf, n);
        }
        return TRUE;
}

/* Waits up to seconds for pid; returns its wait status, or -1 (and kills it) on timeout. */
static int
wait_exit (GPid pid, double seconds)
{
        int wstatus;

        for (int i = 0; i < seconds * 20; i++) {
                if (waitpid (pid, &wstatus, WNOHANG) == pid)
                        return wstatus;
                g_usleep (50000);
        }
        kill (pid, SIGKILL);
        waitpid (pid, &wstatus, 0);
        return -1;
}

/* Ctrl+C on a terminal: the first reaches the command (its trap runs, it goes on), the second
 * kills its process group and corralctl exits with 130. Through a pseudo-terminal, so the
 * terminal driver sends the signals, as for a person. */
static void
test_ctrl_c_terminal (void)
{
        g_autofree char *ctl = corralctl_path ();
        g_autoptr (GString) out = g_string_new (NULL);
        const char *script = "trap 'echo got-int' INT; echo ready $$; "
                             "while :; do sleep 0.1; done";
        const char *cmd_pid;
        GPid sh_pid;
        int master, wstatus;
        pid_t pid = forkpty (&master, NULL, NULL, NULL);

        g_assert_cmpint (pid, >=, 0);
        if (pid == 0) {
                execl (ctl, ctl, "exec", "--local", "--", "sh", "-c", script, (char *) NULL);
                _exit (127);
        }
        g_assert_true (read_until (master, out, "ready ", 20));
        g_assert_true (read_until (master, out, "\n", 5));
        cmd_pid = strstr (out->str, "ready ") + strlen ("ready ");
        sh_pid = (GPid) g_ascii_strtoll (cmd_pid, NULL, 10);
        g_assert_cmpint (sh_pid, >, 0);
        g_assert_cmpint (write (master, "\003", 1), ==, 1);
        g_assert_true (read_until (master, out, "got-int", 10));
        /* Still running: the first Ctrl+C was the command's to handle. */
        g_assert_cmpint (waitpid (pid, &wstatus, WNOHANG), ==, 0);
        g_assert_cmpint (write (master, "\003", 1), ==, 1);
        wstatus = wait_exit (pid, 10);
        g_assert_true (WIFEXITED (wstatus));
        g_assert_cmpint (WEXITSTATUS (wstatus), ==, 130);
        g_assert_true (pid_gone (sh_pid, 5));
        close (master);
}

/* Spawns corralctl exec --local -- sh -c script with stdout on a pipe; returns its pid once
 * the script printed "ready PID" (the command's pid in *ret_sh_pid). */
static GPid
spawn_ready (const char *script, int *ret_out_fd, GPid *ret_sh_pid)
{
        g_autofree char *ctl = corralctl_path ();
        const char *argv[] = { ctl, "exec", "--local", "--", "sh", "-c", script, NULL };
        g_autoptr (GString) out = g_string_new (NULL);
        g_autoptr (GError) error = NULL;
        GPid pid;

        g_spawn_async_with_pipes (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                  die_with_test, NULL, &pid, NULL, ret_out_fd, NULL, &error);
        g_assert_no_error (error);
        g_assert_true (read_until (*ret_out_fd, out, "ready ", 20));
        g_assert_true (read_until (*ret_out_fd, out, "\n", 5));
        *ret_sh_pid = (GPid) g_ascii_strtoll (strstr (out->str, "ready ") + 6, NULL, 10);
        g_assert_cmpint (*ret_sh_pid, >, 0);
        return pid;
}

/* SIGTERM (timeout, a service manager) is forwarded: a command that obeys it ends at once. */
static void
test_sigterm_forwarded (void)
{
        GPid sh_pid, pid;
        int out_fd, wstatus;
        gint64 start;

        pid = spawn_ready ("echo ready $$; exec sleep 30", &out_fd, &sh_pid);
        start = g_get_monotonic_time ();
        g_assert_cmpint (kill (pid, SIGTERM), ==, 0);
        wstatus = wait_exit (pid, 10);
        g_assert_true (WIFEXITED (wstatus));
        g_assert_cmpint (WEXITSTATUS (wstatus), ==, 128 + SIGTERM);
        g_assert_cmpfloat ((g_get_monotonic_time () - start) / 1e6, <, TERM_GRACE_S);
        g_assert_true (pid_gone (sh_pid, 5));
        close (out_fd);
}

/* ... and one that ignores it is killed, with its process group, after a short grace:
 * `timeout 5 corralctl exec VM -- sh -c "trap '' TERM; sleep 30"` returns after about 10 s. */
static void
test_sigterm_grace (void)
{
        GPid sh_pid, pid;
        int out_fd, wstatus;
        gint64 start;
        double took;

        pid = spawn_ready ("trap '' TERM; echo ready $$; sleep 30; echo not-killed", &out_fd,
                           &sh_pid);
        start = g_get_monotonic_time ();
        g_assert_cmpint (kill (pid, SIGTERM), ==, 0);
        wstatus = wait_exit (pid, TERM_GRACE_S + 10);
        took = (g_get_monotonic_time () - start) / 1e6;
        g_assert_cmpint (wstatus, !=, -1);
        g_assert_true (WIFEXITED (wstatus));
        g_assert_cmpint (WEXITSTATUS (wstatus), ==, 128 + SIGTERM);
        g_assert_cmpfloat (took, >=, TERM_GRACE_S - 0.5);
        g_assert_cmpfloat (took, <, TERM_GRACE_S + 4);
        g_assert_true (pid_gone (sh_pid, 5));
        close (out_fd);
}

/* A VM's folder without libvirt --------------------------------------------------------------- */

typedef struct {
        char *state; /* XDG_STATE_HOME */
        char *vm_dir;
        GPid agent_pid;
} FakeVm;

/* $XDG_STATE_HOME/corral/vms/NAME/agent.sock served by a local corral-agent, as QEMU serves a
 * running VM's. */
static void
fake_vm_start (FakeVm *vm, const char *name)
{
        const char *agent = g_getenv ("CORRAL_AGENT_PATH");
        g_autofree char *sock = NULL;
        g_autoptr (GError) error = NULL;

        g_assert_nonnull (agent);
        vm->state = g_dir_make_tmp ("corralctl-state-XXXXXX", &error);
        g_assert_no_error (error);
        vm->vm_dir = g_build_filename (vm->state, "corral", "vms", name, NULL);
        g_assert_cmpint (g_mkdir_with_parents (vm->vm_dir, 0700), ==, 0);
        sock = g_build_filename (vm->vm_dir, "agent.sock", NULL);
        const char *argv[] = { agent, "--unix", sock, "--user", g_get_user_name (), NULL };
        g_spawn_async (NULL, (char **) argv, NULL,
                       G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL, die_with_test, NULL,
                       &vm->agent_pid, &error);
        g_assert_no_error (error);
        for (int i = 0; i < 200 && !g_file_test (sock, G_FILE_TEST_EXISTS); i++)
                g_usleep (25000);
        g_assert_true (g_file_test (sock, G_FILE_TEST_EXISTS));
}

static void
fake_vm_stop (FakeVm *vm)
{
        const char *argv[] = { "rm", "-rf", "--", vm->state, NULL };

        kill (vm->agent_pid, SIGTERM);
        waitpid (vm->agent_pid, NULL, 0);
        g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                      NULL);
        g_free (vm->state);
        g_free (vm->vm_dir);
}

/* exec and info reach a running VM through the socket in its folder: with no libvirt to be had
 * at all, they still work (as root, another process may hold the embedded driver). */
static void
test_vm_without_libvirt (void)
{
        FakeVm vm = { 0 };
        g_autofree char *state_env = NULL;
        const char *env[] = { NULL, "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere", NULL };
        Ctl exec, info, gone;

        fake_vm_start (&vm, "direct");
        env[0] = state_env = g_strconcat ("XDG_STATE_HOME=", vm.state, NULL);
        ctl_env = env;
        exec = run_ctl (NULL, NULL, "exec", "direct", "--", "sh", "-c", "echo in-vm; exit 4", NULL);
        info = run_ctl (NULL, NULL, "info", "direct", NULL);
        gone = run_ctl (NULL, NULL, "exec", "gone", "--", "true", NULL);
        ctl_env = NULL;
        g_assert_cmpstr (exec.err, ==, "");
        g_assert_cmpint (exec.status, ==, 4);
        g_assert_cmpstr (exec.out, ==, "in-vm\n");
        g_assert_cmpint (info.status, ==, 0);
        g_assert_nonnull (strstr (info.out, "VM: direct"));
        /* A VM that does not answer there is libvirt's to explain. */
        g_assert_cmpint (gone.status, ==, 125);
        g_assert_nonnull (strstr (gone.err, "libvirt"));
        ctl_clear (&exec);
        ctl_clear (&info);
        ctl_clear (&gone);
        fake_vm_stop (&vm);
}

/* Subcommands read their options with GOptionContext: each has --help, numbers are parsed whole
 * and in range, and a bad option is explained before libvirt is ever asked. (LC_ALL=C:
 * GLib prints the quotation marks around a value as "?".) */
static void
test_subcommand_options (void)
{
        const char *env[] = { "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere", NULL };
        static const struct {
                const char *args[6];
                const char *said;
        } bad[] = {
                { { "vm", "create", "x", "--memory", "12abc" },
                  "12abc? is not a whole number from 64" },
                { { "vm", "create", "x", "--memory", "99999999999" }, "from 64 to 1048576" },
                { { "vm", "create", "x", "--memory=-512" }, "-512? is not" },
                { { "vm", "create", "x", "--cpus", "0" },
                  "0? is not a whole number from 1 to 256" },
                { { "vm", "pool", "fill", "many" }, "N: ?many?" },
                { { "vm", "create", "x", "--bogus" }, "Unknown option --bogus" },
                { { "vm", "create" }, "vm create: expected NAME" },
                { { "vm", "fork", "a" }, "vm fork: expected SOURCE NEW" },
                { { "vm", "ls", "extra" }, "vm ls: expected no arguments" },
                { { "vm", "bogus" }, "unknown command ?bogus?" },
                { { "share", "add", "vm1" }, "share add: expected VM PATH" },
                { { "share", "set", "vm1", "x", "--mode" }, "Missing argument for --mode" },
                { { "share", "zap" }, "share: unknown command ?zap?" },
                { { "net", "allow", "vm1" }, "net allow: expected VM HOST[:PORT]" },
                { { "net", "ls", "vm1", "--bogus" }, "Unknown option --bogus" },
                { { "image", "verify", "../x" }, "is not an image name" },
                { { "image", "build" }, "image build: give an image NAME or --recipe FILE" },
                { { "gc", "now" }, "gc: expected no arguments" },
        };
        static const char *const groups[] = { "vm", "share", "net", "image" };
        Ctl help;

        ctl_env = env;
        for (gsize i = 0; i < G_N_ELEMENTS (bad); i++) {
                const char *const *a = bad[i].args;
                Ctl c = run_ctl (NULL, NULL, a[0], a[1], a[2], a[3], a[4], a[5], NULL);

                g_test_message ("corralctl %s %s %s: %s", a[0], a[1], a[2] ? a[2] : "", c.err);
                g_assert_cmpint (c.status, ==, 125);
                g_assert_nonnull (strstr (c.err, bad[i].said));
                g_assert_null (strstr (c.err, "libvirt"));
                ctl_clear (&c);
        }
        for (gsize i = 0; i < G_N_ELEMENTS (groups); i++) {
                Ctl group = run_ctl (NULL, NULL, groups[i], "--help", NULL);
                g_autofree char *line = g_strdup_printf ("Usage: corralctl %s COMMAND", groups[i]);

                g_assert_cmpint (group.status, ==, 0);
                g_assert_nonnull (strstr (group.out, line));
                ctl_clear (&group);
        }
        help = run_ctl (NULL, NULL, "vm", "create", "--help", NULL);
        ctl_env = NULL;
        g_assert_cmpint (help.status, ==, 0);
        g_assert_nonnull (strstr (help.out, "corralctl vm create [OPTION"));
        g_assert_nonnull (strstr (help.out, "] NAME\n"));
        g_assert_nonnull (strstr (help.out, "--memory=MIB"));
        g_assert_nonnull (strstr (help.out, "--share=PATH:MODE"));
        ctl_clear (&help);
}

/* A damaged managed policy stops `vm create` and `vm pool fill` before libvirt is asked
 * anything, with the words the app shows (app/task, and tests/ui/test-ui-vm.c for the app):
 * the file, and who can fix it. */
static void
test_damaged_policy_before_boot (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-policy-XXXXXX", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *policy_env = g_strconcat ("CORRAL_MANAGED_POLICY=", policy, NULL);
        g_autofree char *state_env = g_strconcat ("XDG_STATE_HOME=", dir, NULL);
        const char *env[] = { policy_env, state_env,
                              "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere", NULL };
        const char *const commands[][4] = { { "vm", "create", "work", NULL },
                                            { "vm", "pool", "fill", "1" } };

        g_assert_true (g_file_set_contents (
                policy, "{\"sharedFolders\": {\"protectedPaths\": [\"../..\"]}}", -1, NULL));
        ctl_env = env;
        for (gsize i = 0; i < G_N_ELEMENTS (commands); i++) {
                Ctl c = run_ctl (NULL, NULL, commands[i][0], commands[i][1], commands[i][2],
                                 commands[i][3], NULL);

                g_assert_cmpint (c.status, ==, 125);
                g_assert_nonnull (strstr (c.err, policy));
                g_assert_nonnull (strstr (c.err, "IT department"));
                g_assert_null (strstr (c.err, "libvirt"));
                ctl_clear (&c);
        }
        ctl_env = NULL;
        g_assert_cmpint (g_unlink (policy), ==, 0);
        g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* Computer use the organisation locked off: `vm create --screen` is refused with whose rule it
 * is, before libvirt is asked anything (SECURITY.md V11); a screen size out of bounds and a
 * VM without a screen are said plainly. */
static void
test_screen_refused (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-screen-XXXXXX", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *policy_env = g_strconcat ("CORRAL_MANAGED_POLICY=", policy, NULL);
        g_autofree char *state_env = g_strconcat ("XDG_STATE_HOME=", dir, NULL);
        const char *env[] = { policy_env, state_env,
                              "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere", NULL };
        Ctl c;

        g_assert_true (
                g_file_set_contents (policy, "{\"computerUse\": {\"allowed\": false}}", -1, NULL));
        ctl_env = env;
        c = run_ctl (NULL, NULL, "vm", "create", "--screen", "work", NULL);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "Computer use"));
        g_assert_nonnull (strstr (c.err, "set by your organisation"));
        g_assert_null (strstr (c.err, "libvirt"));
        ctl_clear (&c);
        /* --screen-size asks for a screen too. */
        c = run_ctl (NULL, NULL, "vm", "create", "--screen-size", "1024x768", "work", NULL);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "set by your organisation"));
        ctl_clear (&c);

        g_assert_true (g_file_set_contents (policy, "{}", -1, NULL));
        c = run_ctl (NULL, NULL, "vm", "create", "--screen-size", "100x100", "work", NULL);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "--screen-size"));
        g_assert_nonnull (strstr (c.err, "640"));
        ctl_clear (&c);
        c = run_ctl (NULL, NULL, "computer", "work", "screenshot", "-o", "x.png", NULL);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "has no screen"));
        g_assert_nonnull (strstr (c.err, "--screen"));
        ctl_clear (&c);
        c = run_ctl (NULL, NULL, "computer", "work", "dance", NULL);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "unknown action"));
        ctl_clear (&c);
        c = run_ctl (NULL, NULL, "computer", "work", "click", "10", NULL);
        g_assert_cmpint (c.status, ==, 125);
        g_assert_nonnull (strstr (c.err, "takes 2 argument"));
        ctl_clear (&c);
        ctl_env = NULL;
        g_assert_cmpint (g_unlink (policy), ==, 0);
        g_assert_cmpint (g_rmdir (dir), ==, 0);
}

/* `corralctl changes`: the journal corral-fsd kept, as the person reads it and as JSON, for a
 * VM that is there and for one that was removed (the journal outlives it); a damaged journal
 * is an error naming the file and line, never an empty list. */
static void
test_changes (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-changes-XXXXXX", NULL);
        g_autofree char *vm_dir = g_build_filename (dir, "corral", "vms", "work", NULL);
        g_autofree char *kept = g_build_filename (dir, "corral", "kept", "work", NULL);
        g_autofree char *copies = g_build_filename (kept, "docs", NULL);
        g_autofree char *folder = g_build_filename (dir, "docs", NULL);
        g_autofree char *config = g_build_filename (vm_dir, "shares.json", NULL);
        g_autofree char *journal = g_build_filename (kept, "changes.jsonl", NULL);
        g_autofree char *a = g_build_filename (folder, "a.txt", NULL);
        g_autofree char *copy = g_build_filename (copies, "1-a.txt", NULL);
        g_autofree char *shares = NULL, *state_env = g_strconcat ("XDG_STATE_HOME=", dir, NULL);
        g_autofree char *records = NULL, *text = NULL;
        const char *env[] = { state_env, "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere", NULL };
        const char *rm[] = { "rm", "-rf", dir, NULL };
        const char *changes =
                "{\"t\":\"keep\",\"share\":\"docs\",\"path\":\"a.txt\",\"copy\":\"docs/1-a.txt\","
                "\"size\":4,\"mode\":420,\"time\":1}\n"
                "{\"t\":\"add\",\"share\":\"docs\",\"path\":\"new\",\"kind\":\"dir\",\"time\":2}\n"
                "{\"t\":\"rename\",\"share\":\"docs\",\"path\":\"b.txt\",\"to\":\"new/b.txt\","
                "\"kind\":\"file\",\"time\":3}\n"
                "{\"t\":\"keep\",\"share\":\"docs\",\"path\":\"big.iso\",\"lost\":\"budget\","
                "\"size\":9,\"time\":4}\n"
                /* A name the guest chose to clear the person's terminal. */
                "{\"t\":\"add\",\"share\":\"docs\",\"path\":\"evil\\u001b[2Jname\","
                "\"kind\":\"file\",\"time\":5}\n";
        Ctl human, json, gone, damaged, diff, undo, lost, keep, after, space, bad_space;

        g_assert_cmpint (g_mkdir_with_parents (vm_dir, 0700), ==, 0);
        g_assert_cmpint (g_mkdir_with_parents (copies, 0700), ==, 0);
        g_assert_cmpint (g_mkdir_with_parents (folder, 0700), ==, 0);
        shares = g_strdup_printf (
                "{\"shares\": [{\"name\": \"docs\", \"path\": \"%s\", \"mode\": \"rw\"}]}", folder);
        g_assert_true (g_file_set_contents (config, shares, -1, NULL));
        /* The journal names the share's folder first, as corral-fsd writes it. */
        records = g_strdup_printf ("{\"t\":\"share\",\"share\":\"docs\",\"folder\":\"%s\","
                                   "\"time\":0}\n%s",
                                   folder, changes);
        g_assert_true (g_file_set_contents (journal, records, -1, NULL));
        g_assert_true (g_file_set_contents (a, "new text\n", -1, NULL));
        g_assert_true (g_file_set_contents (copy, "old\n", -1, NULL));
        ctl_env = env;

        human = run_ctl (NULL, NULL, "changes", "work", NULL);
        g_assert_cmpstr (human.err, ==, "");
        g_assert_cmpint (human.status, ==, 0);
        /* The arrow between the sizes is "?" in the C locale the suite runs in. */
        g_assert_nonnull (strstr (human.out, "modified  docs/a.txt  4 bytes "));
        g_assert_nonnull (strstr (human.out, " 9 bytes\n"));
        g_assert_nonnull (strstr (human.out, "added     docs/new/"));
        g_assert_nonnull (strstr (human.out, "renamed   docs/new/b.txt  (was docs/b.txt)"));
        g_assert_nonnull (strstr (human.out, "docs/big.iso  not kept"));
        g_assert_nonnull (strstr (human.out, "added     docs/evil\\x1b[2Jname"));
        g_assert_null (strchr (human.out, '\x1b'));
        /* The space the originals take, of what they may (the default). */
        g_assert_nonnull (strstr (human.out, "\nOriginals kept for undo: "));
        /* g_format_size() puts a no-break space before the unit ("?" in the C locale). */
        g_assert_nonnull (strstr (human.out, " of 2.1"));

        /* The person chooses another space; one out of range is refused, nothing changed. */
        space = run_ctl (NULL, NULL, "changes", "work", "--kept-space", "4096", NULL);
        g_assert_cmpstr (space.err, ==, "");
        g_assert_cmpint (space.status, ==, 0);
        g_assert_nonnull (strstr (space.out, "up to 4.3"));
        bad_space = run_ctl (NULL, NULL, "changes", "work", "--kept-space", "10", NULL);
        g_assert_cmpint (bad_space.status, ==, 125);
        g_assert_nonnull (strstr (bad_space.err, "--kept-space takes a number of megabytes"));
        ctl_clear (&space);
        space = run_ctl (NULL, NULL, "changes", "work", NULL);
        g_assert_nonnull (strstr (space.out, " of 4.3"));

        json = run_ctl (NULL, NULL, "changes", "work", "--json", NULL);
        g_assert_cmpint (json.status, ==, 0);
        /* cJSON's layout: one member per line, a tab after the colon. */
        g_assert_true (g_str_has_prefix (json.out, "[{"));
        g_assert_nonnull (strstr (json.out, "\"change\":\t\"modified\""));
        g_assert_nonnull (strstr (json.out, "\"size_before\":\t4,"));
        g_assert_nonnull (strstr (json.out, "\"size_now\":\t9,"));
        g_assert_nonnull (strstr (json.out, "\"original_kept\":\ttrue"));
        g_assert_nonnull (strstr (json.out, "\"from\":\t\"b.txt\""));
        g_assert_nonnull (strstr (json.out, "\"not_kept_because\":\t\"budget\""));
        {
                g_autofree char *f = g_strdup_printf ("\"folder\":\t\"%s\"", folder);
                g_assert_nonnull (strstr (json.out, f));
        }

        /* The file as a unified diff, the original against now. */
        diff = run_ctl (NULL, NULL, "diff", "work", "docs/a.txt", NULL);
        g_assert_cmpint (diff.status, ==, 0);
        g_assert_nonnull (strstr (diff.out, "--- a/docs/a.txt\n+++ b/docs/a.txt\n"));
        g_assert_nonnull (strstr (diff.out, "\n-old\n+new text\n"));

        /* What was not kept cannot be undone, and says why. */
        lost = run_ctl (NULL, NULL, "undo", "work", "docs/big.iso", NULL);
        g_assert_cmpint (lost.status, ==, 1);
        g_assert_nonnull (strstr (lost.out, "not undone docs/big.iso"));
        g_assert_nonnull (strstr (lost.out, "was not kept"));

        /* Undone: the original is back; the rest stays listed. */
        undo = run_ctl (NULL, NULL, "undo", "work", "docs/a.txt", NULL);
        g_assert_cmpstr (undo.err, ==, "");
        g_assert_cmpint (undo.status, ==, 0);
        g_assert_nonnull (strstr (undo.out, "undone    docs/a.txt"));
        g_assert_true (g_file_get_contents (a, &text, NULL, NULL));
        g_assert_cmpstr (text, ==, "old\n");

        /* Keep: nothing is listed any more, and the originals are gone. */
        keep = run_ctl (NULL, NULL, "keep", "work", NULL);
        g_assert_cmpint (keep.status, ==, 0);
        after = run_ctl (NULL, NULL, "changes", "work", NULL);
        g_assert_nonnull (strstr (after.out, "No changes"));
        g_assert_false (g_file_test (copy, G_FILE_TEST_EXISTS));
        g_assert_true (g_file_set_contents (journal, records, -1, NULL));

        /* The VM removed: its changes are still there to review and undo. */
        rm[2] = vm_dir;
        g_assert_true (g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                     NULL, NULL, NULL, NULL));
        gone = run_ctl (NULL, NULL, "changes", "work", NULL);
        g_assert_cmpint (gone.status, ==, 0);
        g_assert_nonnull (strstr (gone.out, "modified  docs/a.txt"));
        /* What the originals take still counts; there is no VM to give a space. */
        g_assert_nonnull (strstr (gone.out, "\nOriginals kept for undo: "));
        g_assert_null (strstr (gone.out, " of "));

        /* Damaged: said, with the file and the line. */
        g_assert_true (g_file_set_contents (journal, "{\"t\":\"add\"}\n", -1, NULL));
        damaged = run_ctl (NULL, NULL, "changes", "work", NULL);
        g_assert_cmpint (damaged.status, ==, 125);
        g_assert_nonnull (strstr (damaged.err, journal));
        g_assert_nonnull (strstr (damaged.err, "line 1"));

        ctl_env = NULL;
        rm[2] = dir;
        g_assert_true (g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                     NULL, NULL, NULL, NULL));
        ctl_clear (&human);
        ctl_clear (&json);
        ctl_clear (&gone);
        ctl_clear (&damaged);
        ctl_clear (&diff);
        ctl_clear (&undo);
        ctl_clear (&lost);
        ctl_clear (&keep);
        ctl_clear (&after);
        ctl_clear (&space);
        ctl_clear (&bad_space);
}

/* A VM whose network session its egress daemon ended (a program sent a real secret): corralctl
 * says so before it runs the next command there (SECURITY.md K9). */
static void
test_vm_network_off_said (void)
{
        FakeVm vm = { 0 };
        g_autofree char *state_env = NULL, *alert = NULL, *lock = NULL;
        const char *env[] = { NULL, "CORRAL_LIBVIRT_URI=corral-test-none:///nowhere", NULL };
        int lock_fd;
        Ctl exec;

        fake_vm_start (&vm, "direct");
        /* The daemon that wrote it still runs: it holds its lock. */
        lock = g_build_filename (vm.vm_dir, "egressd.lock", NULL);
        lock_fd = open (lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        g_assert_cmpint (flock (lock_fd, LOCK_EX), ==, 0);
        alert = g_build_filename (vm.vm_dir, "network-off.txt", NULL);
        g_assert_true (g_file_set_contents (
                alert, "The VM's network is off: a program in it sent the real value of github.",
                -1, NULL));
        env[0] = state_env = g_strconcat ("XDG_STATE_HOME=", vm.state, NULL);
        ctl_env = env;
        exec = run_ctl (NULL, NULL, "exec", "direct", "--", "true", NULL);
        ctl_env = NULL;
        g_assert_cmpint (exec.status, ==, 0);
        g_assert_nonnull (strstr (exec.err, "network is off"));
        g_assert_nonnull (strstr (exec.err, "github"));
        ctl_clear (&exec);
        close (lock_fd);
        fake_vm_stop (&vm);
}

/* As root without a running libvirt daemon, Corral embeds libvirt, which one process at a time
 * can use: the others are told which process that is. */
static void
test_embedded_holder_named (void)
{
        g_autofree char *state = NULL;
        g_autofree char *state_env = NULL;
        g_autofree char *uri = NULL;
        g_autofree char *pidfile = NULL;
        g_autofree char *pid_text = NULL;
        g_autofree char *process = NULL;
        g_autofree char *supp = NULL;
        g_autofree char *virsh_path = NULL;
        g_autofree char *lsan_env = NULL;
        g_autoptr (GError) error = NULL;
        const char *env[] = { NULL, NULL, NULL };
        const char *rm[] = { "rm", "-rf", "--", NULL, NULL };
        GPid virsh;
        int virsh_in;
        Ctl first, held;

        virsh_path = g_find_program_in_path ("virsh");
        if (geteuid () != 0 || !virsh_path) {
                g_test_skip ("needs root and virsh");
                return;
        }
        if (g_file_test ("/run/libvirt/libvirt-sock", G_FILE_TEST_EXISTS) ||
            g_file_test ("/run/libvirt/virtqemud-sock", G_FILE_TEST_EXISTS)) {
                g_test_skip ("a system libvirt daemon runs: root uses it, not the embedded one");
                return;
        }
        state = g_dir_make_tmp ("corralctl-embed-XXXXXX", &error);
        g_assert_no_error (error);
        env[0] = state_env = g_strconcat ("XDG_STATE_HOME=", state, NULL);
        /* Under ASan: libvirt's QEMU driver leaks a string when its initialisation fails (its
         * frames are found only by the slow unwinder). */
        supp = g_build_filename (state, "lsan.supp", NULL);
        g_file_set_contents (supp, "leak:libvirt_driver_qemu.so\n", -1, &error);
        g_assert_no_error (error);
        env[1] = lsan_env =
                g_strconcat ("LSAN_OPTIONS=fast_unwind_on_malloc=0:suppressions=", supp, NULL);
        ctl_env = env;
        first = run_ctl (NULL, NULL, "vm", "ls", NULL);
        g_assert_cmpint (first.status, ==, 0);
        /* virsh on the same root holds it while its shell waits for input. */
        uri = g_strdup_printf ("qemu:///embed?root=%s/corral/libvirt", state);
        pidfile = g_build_filename (state, "corral", "libvirt", "run", "qemu", "driver.pid", NULL);
        const char *argv[] = { "virsh", "-q", "-c", uri, NULL };
        g_spawn_async_with_pipes (NULL, (char **) argv, NULL,
                                  G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                                          G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                                  die_with_test, NULL, &virsh, &virsh_in, NULL, NULL, &error);
        g_assert_no_error (error);
        for (int i = 0; i < 200; i++) {
                g_clear_pointer (&pid_text, g_free);
                if (g_file_get_contents (pidfile, &pid_text, NULL, NULL) &&
                    g_ascii_strtoll (pid_text, NULL, 10) == virsh)
                        break;
                g_usleep (50000);
        }
        held = run_ctl (NULL, NULL, "vm", "ls", NULL);
        ctl_env = NULL;
        close (virsh_in);
        waitpid (virsh, NULL, 0);
        process = g_strdup_printf ("process %d", (int) virsh);
        g_assert_cmpint (held.status, ==, 125);
        g_assert_nonnull (strstr (held.err, "virsh"));
        g_assert_nonnull (strstr (held.err, process));
        ctl_clear (&first);
        ctl_clear (&held);
        rm[3] = state;
        g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                      NULL);
}

/* `corralctl policy`: the main file and a drop-in as Corral merges them, where each setting
 * comes from, the same as JSON; `policy check` on a good and a bad file (its line named); a
 * damaged policy is corralctl's own failure. */
static void
test_policy (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-policy-XXXXXX", NULL);
        g_autofree char *drop_ins = g_build_filename (dir, "managed.d", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *drop_in = g_build_filename (drop_ins, "10-network.json", NULL);
        g_autofree char *bad = g_build_filename (dir, "bad.json", NULL);
        g_autofree char *damaged = g_build_filename (drop_ins, "20-damaged.json", NULL);
        g_autofree char *policy_env = g_strconcat ("CORRAL_MANAGED_POLICY=", policy, NULL);
        g_autofree char *line = NULL, *from_both = NULL, *digest = NULL;
        const char *env[] = { policy_env, NULL };
        const char *rm[] = { "rm", "-rf", "--", dir, NULL };
        Ctl show, json, check, check_bad, broken;

        g_assert_cmpint (g_mkdir (drop_ins, 0700), ==, 0);
        g_assert_true (g_file_set_contents (
                policy,
                "{\"sharedFolders\": {\"protectedPaths\": [\"deploy/\"], \"maxMode\": \"rw\"},\n"
                " \"vm\": {\"maxVcpus\": {\"value\": 2, \"locked\": false}},\n"
                " \"network\": {\"allowedHosts\": [\"example.com\"]}}\n",
                -1, NULL));
        g_assert_true (g_file_set_contents (
                drop_in,
                "{\"sharedFolders\": {\"protectedPaths\": [\"infra/\"], \"maxMode\": \"ro\"},\n"
                " \"network\": {\"allowedHosts\": [\"example.com\", \"*.example.org\"]}}\n",
                -1, NULL));
        g_assert_true (
                g_file_set_contents (bad, "{\"vm\": {\n  \"maxVcpus\": 4,,\n}}\n", -1, NULL));
        ctl_env = env;

        show = run_ctl (NULL, NULL, "policy", "show", NULL);
        g_assert_cmpstr (show.err, ==, "");
        g_assert_cmpint (show.status, ==, 0);
        line = g_strdup_printf ("Files read: %s, %s\n", policy, drop_in);
        g_assert_nonnull (strstr (show.out, line));
        g_assert_nonnull (strstr (show.out, "Digest: "));
        /* the most restrictive wins, from the file that set it */
        g_clear_pointer (&line, g_free);
        line = g_strdup_printf ("\nsharedFolders.maxMode = \"ro\"  (locked, from %s)\n", drop_in);
        g_assert_nonnull (strstr (show.out, line));
        from_both = g_strdup_printf ("\nsharedFolders.protectedPaths = [\"deploy/\",\"infra/\"]  "
                                     "(locked, from %s, %s)\n",
                                     policy, drop_in);
        g_assert_nonnull (strstr (show.out, from_both));
        g_clear_pointer (&line, g_free);
        line = g_strdup_printf ("\nvm.maxVcpus = 2  (default, from %s)\n", policy);
        g_assert_nonnull (strstr (show.out, line));
        /* an allow list per file: each applies */
        g_clear_pointer (&line, g_free);
        line = g_strdup_printf ("\nnetwork.allowedHosts = [\"example.com\",\"*.example.org\"]  "
                                "(locked, from %s)\n",
                                drop_in);
        g_assert_nonnull (strstr (show.out, line));
        g_assert_nonnull (strstr (show.out, "\ncomputerUse.allowed  (not set)\n"));

        json = run_ctl (NULL, NULL, "policy", "show", "--json", NULL);
        g_assert_cmpint (json.status, ==, 0);
        g_assert_nonnull (strstr (json.out, "\"sharedFolders.maxMode\":\t{"));
        g_assert_nonnull (strstr (json.out, "\"value\":\t\"ro\""));
        g_assert_nonnull (strstr (json.out, "\"set\":\tfalse"));
        digest = g_strndup (strstr (show.out, "Digest: ") + 8, 64);
        g_assert_nonnull (strstr (json.out, digest));

        check = run_ctl (NULL, NULL, "policy", "check", policy, drop_in, NULL);
        g_assert_cmpint (check.status, ==, 0);
        g_clear_pointer (&line, g_free);
        line = g_strdup_printf ("%s: ok\n%s: ok\n", policy, drop_in);
        g_assert_cmpstr (check.out, ==, line);
        check_bad = run_ctl (NULL, NULL, "policy", "check", bad, NULL);
        g_assert_cmpint (check_bad.status, ==, 1);
        g_assert_nonnull (strstr (check_bad.err, bad));
        g_assert_nonnull (strstr (check_bad.err, "line 2"));
        g_assert_nonnull (strstr (check_bad.err, "IT department"));

        /* a damaged drop-in: no partial policy, an error that names it */
        g_assert_true (g_file_set_contents (damaged, "{\"vm\": {\"maxVcpus\": 0}}", -1, NULL));
        broken = run_ctl (NULL, NULL, "policy", "show", NULL);
        ctl_env = NULL;
        g_assert_cmpint (broken.status, ==, 125);
        g_assert_cmpstr (broken.out, ==, "");
        g_assert_nonnull (strstr (broken.err, damaged));
        g_assert_nonnull (strstr (broken.err, "vm.maxVcpus"));
        g_assert_nonnull (strstr (broken.err, "IT department"));

        ctl_clear (&show);
        ctl_clear (&json);
        ctl_clear (&check);
        ctl_clear (&check_bad);
        ctl_clear (&broken);
        g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL, NULL,
                      NULL);
}

/* An image folder as the builders make one: two artifacts and their manifest. */
static void
fake_image (const char *dir, const char *name)
{
        g_autofree char *k = g_compute_checksum_for_string (G_CHECKSUM_SHA256, "kernel", -1);
        g_autofree char *i = g_compute_checksum_for_string (G_CHECKSUM_SHA256, "initrd", -1);
        g_autofree char *manifest = g_strdup_printf (
                "{\"image\": \"%s\", \"format\": 1, \"built\": \"2026-12-01T00:00:00Z\", "
                "\"artifacts\": {\"vmlinuz\": \"%s\", \"initramfs.img\": \"%s\"}}",
                name, k, i);
        g_autofree char *kp = g_build_filename (dir, "vmlinuz", NULL);
        g_autofree char *ip = g_build_filename (dir, "initramfs.img", NULL);
        g_autofree char *mp = g_build_filename (dir, "manifest.json", NULL);

        g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
        g_assert_true (g_file_set_contents (kp, "kernel", -1, NULL));
        g_assert_true (g_file_set_contents (ip, "initrd", -1, NULL));
        g_assert_true (g_file_set_contents (mp, manifest, -1, NULL));
}

/* The organisation's own image (SECURITY.md M9): a key made with `image keygen`, an image
 * imported and signed with it, a policy that trusts only that key and requires a signature:
 * the signed image verifies, an unsigned import and a tampered copy are refused by name. */
static void
test_image_signing (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-sign-XXXXXX", NULL);
        g_autofree char *src = g_build_filename (dir, "src", NULL);
        g_autofree char *other = g_build_filename (dir, "other", NULL);
        g_autofree char *key = g_build_filename (dir, "it.key", NULL);
        g_autofree char *policy = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *cache_env = g_strconcat ("XDG_CACHE_HOME=", dir, NULL);
        g_autofree char *policy_env = g_strconcat ("CORRAL_MANAGED_POLICY=", policy, NULL);
        g_autofree char *pub = NULL, *text = NULL, *cached = NULL;
        const char *env[] = { cache_env, policy_env, NULL };
        const char *rm[] = { "rm", "-rf", dir, NULL };
        Ctl keygen, import, sign, verify, unsigned_import, tampered;

        fake_image (src, "acme");
        fake_image (other, "acme-unsigned");
        ctl_env = env;
        keygen = run_ctl (NULL, NULL, "image", "keygen", key, NULL);
        g_assert_cmpint (keygen.status, ==, 0);
        pub = g_strstrip (g_strdup (keygen.out));
        g_assert_cmpuint (strlen (pub), ==, 44);
        /* No policy yet: the import is checked against its manifest only. */
        import = run_ctl (NULL, NULL, "image", "import", src, NULL);
        g_assert_cmpstr (import.err, !=, NULL);
        g_assert_cmpint (import.status, ==, 0);
        sign = run_ctl (NULL, NULL, "image", "sign", "acme", "--key", key, NULL);
        g_assert_cmpint (sign.status, ==, 0);
        g_assert_nonnull (strstr (sign.err, pub));

        text = g_strdup_printf ("{\"images\": {\"requireSigned\": true, \"trustedKeys\": "
                                "[\"%s\"]}}",
                                pub);
        g_assert_true (g_file_set_contents (policy, text, -1, NULL));
        verify = run_ctl (NULL, NULL, "image", "verify", "acme", NULL);
        g_assert_cmpint (verify.status, ==, 0);
        unsigned_import = run_ctl (NULL, NULL, "image", "import", other, NULL);
        g_assert_cmpint (unsigned_import.status, ==, 125);
        g_assert_nonnull (strstr (unsigned_import.err, "acme-unsigned"));
        g_assert_nonnull (strstr (unsigned_import.err, "is not signed"));

        /* A copy in the store changed after signing: refused by name. */
        cached = g_strstrip (g_strdup (verify.out));
        {
                g_autofree char *m = g_build_filename (cached, "manifest.json", NULL);
                g_autofree char *was = NULL, *now = NULL;

                g_assert_true (g_file_get_contents (m, &was, NULL, NULL));
                now = g_strconcat (was, "\n", NULL);
                g_assert_true (g_file_set_contents (m, now, -1, NULL));
        }
        tampered = run_ctl (NULL, NULL, "image", "verify", "acme", NULL);
        g_assert_cmpint (tampered.status, ==, 125);
        g_assert_nonnull (strstr (tampered.err, "acme"));
        g_assert_nonnull (strstr (tampered.err, "changed after it was signed"));

        ctl_env = NULL;
        g_assert_true (g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                     NULL, NULL, NULL, NULL));
        ctl_clear (&keygen);
        ctl_clear (&import);
        ctl_clear (&sign);
        ctl_clear (&verify);
        ctl_clear (&unsigned_import);
        ctl_clear (&tampered);
}

static void
sh_ok (const char *cmd)
{
        g_test_message ("%s", cmd);
        g_assert_cmpint (system (cmd), ==, 0);
}

/* The image archive (SECURITY.md M10): `image export` writes an imported image to one file that
 * `image import` on another account takes; an archive holding anything but plain files (a
 * link, a folder, a name with "..", too many files) is refused before a byte is unpacked,
 * and nothing is left in the image store. */
static void
test_image_archive (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-archive-XXXXXX", NULL);
        g_autofree char *src = g_build_filename (dir, "src", NULL);
        g_autofree char *tar = g_build_filename (dir, "acme.tar", NULL);
        g_autofree char *cache1 = g_strconcat ("XDG_CACHE_HOME=", dir, "/it", NULL);
        g_autofree char *cache2 = g_strconcat ("XDG_CACHE_HOME=", dir, "/workstation", NULL);
        g_autofree char *store = g_build_filename (dir, "workstation", "corral", "images", NULL);
        g_autofree char *victim = g_build_filename (dir, "victim", NULL);
        g_autofree char *cmd = NULL, *content = NULL;
        const char *env1[] = { cache1, "CORRAL_MANAGED_POLICY=/nonexistent", NULL };
        const char *env2[] = { cache2, "CORRAL_MANAGED_POLICY=/nonexistent", NULL };
        const char *rm[] = { "rm", "-rf", dir, NULL };
        static const char *const evil[][2] = {
                { "link", "ln -sf ../victim vmlinuz && tar -cf ../evil.tar vmlinuz manifest.json" },
                { "folder", "mkdir sub && cp manifest.json sub/ && tar -cf ../evil.tar sub" },
                { "dotdot", "tar -cf ../evil.tar ../src/manifest.json" },
                { "hardlink", "ln manifest.json m2 && tar -cf ../evil.tar manifest.json m2" },
                { "many", "for i in $(seq 20); do echo > f$i; done && tar -cf ../evil.tar f*" },
                { "spaces", "echo > 'a b' && tar -cf ../evil.tar 'a b'" },
        };
        Ctl import, exported, imported, verify;

        fake_image (src, "acme");
        ctl_env = env1;
        import = run_ctl (NULL, NULL, "image", "import", src, NULL);
        g_assert_cmpint (import.status, ==, 0);
        exported = run_ctl (NULL, NULL, "image", "export", "acme", tar, NULL);
        g_assert_cmpint (exported.status, ==, 0);
        ctl_env = env2;
        imported = run_ctl (NULL, NULL, "image", "import", tar, NULL);
        g_assert_cmpint (imported.status, ==, 0);
        verify = run_ctl (NULL, NULL, "image", "verify", "acme", NULL);
        g_assert_cmpint (verify.status, ==, 0);
        g_assert_true (g_str_has_prefix (verify.out, store));

        g_assert_true (g_file_set_contents (victim, "untouched", -1, NULL));
        for (guint i = 0; i < G_N_ELEMENTS (evil); i++) {
                g_autofree char *evil_dir = g_build_filename (dir, "evil", NULL);
                Ctl refused;

                g_test_message ("archive with %s", evil[i][0]);
                cmd = g_strdup_printf ("rm -rf '%s' && cp -r '%s' '%s' && cd '%s' && %s", evil_dir,
                                       src, evil_dir, evil_dir, evil[i][1]);
                sh_ok (cmd);
                g_clear_pointer (&cmd, g_free);
                cmd = g_build_filename (dir, "evil.tar", NULL);
                refused = run_ctl (NULL, NULL, "image", "import", cmd, NULL);
                g_clear_pointer (&cmd, g_free);
                g_assert_cmpint (refused.status, ==, 125);
                g_assert_nonnull (strstr (refused.err, "is not an image archive"));
                ctl_clear (&refused);
                /* Only the image imported above is in the store: nothing unpacked is left. */
                cmd = g_strdup_printf ("test $(ls -A '%s' | wc -l) = 1", store);
                sh_ok (cmd);
                g_clear_pointer (&cmd, g_free);
        }
        g_assert_true (g_file_get_contents (victim, &content, NULL, NULL));
        g_assert_cmpstr (content, ==, "untouched");

        ctl_env = NULL;
        g_assert_true (g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                     NULL, NULL, NULL, NULL));
        ctl_clear (&import);
        ctl_clear (&exported);
        ctl_clear (&imported);
        ctl_clear (&verify);
}

/* A recipe (guest-image/standard/README.md, "Recipes") is checked before anything is built:
 * an unknown key, Corral's own image names, a file among Corral's own, a path with "..", a
 * certificate that is not one, each refused with the reason. */
static void
test_image_recipe_refused (void)
{
        g_autofree char *dir = g_dir_make_tmp ("corralctl-recipe-XXXXXX", NULL);
        g_autofree char *recipe = g_build_filename (dir, "recipe.json", NULL);
        g_autofree char *cache = g_strconcat ("XDG_CACHE_HOME=", dir, NULL);
        const char *env[] = { cache, NULL };
        const char *rm[] = { "rm", "-rf", dir, NULL };
        static const char *const bad[][2] = {
                { "{\"name\": \"acme\", \"pkgs\": []}", "unknown key 'pkgs'" },
                { "{\"name\": \"standard\"}", "is Corral's own image" },
                { "{\"name\": \"Acme Corp\"}", "\"name\" must be" },
                { "{\"name\": \"acme\", \"files\": [{\"path\": \"/etc/corral/managed.json\", "
                  "\"content\": \"{}\"}]}",
                  "is Corral's own" },
                { "{\"name\": \"acme\", \"files\": [{\"path\": \"/etc/../root/x\", "
                  "\"content\": \"\"}]}",
                  "bad path" },
                { "{\"name\": \"acme\", \"ca_certificates\": [\"recipe.json\"]}",
                  "has no PEM certificate" },
                { "{\"name\": \"acme\", \"packages\": [\"jq; rm -rf /\"]}",
                  "Debian package names" },
        };

        ctl_env = env;
        for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
                Ctl refused;

                g_assert_true (g_file_set_contents (recipe, bad[i][0], -1, NULL));
                refused = run_ctl (NULL, NULL, "image", "build", "--recipe", recipe, NULL);
                g_test_message ("%s -> %s", bad[i][0], refused.err);
                g_assert_cmpint (refused.status, ==, 125);
                g_assert_nonnull (strstr (refused.err, bad[i][1]));
                ctl_clear (&refused);
        }
        ctl_env = NULL;
        g_assert_true (g_spawn_sync (NULL, (char **) rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                     NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);

        g_test_add_func ("/corralctl/version-help", test_version_help);
        g_test_add_func ("/corralctl/exit-status", test_exit_status);
        g_test_add_func ("/corralctl/env-cwd-stdin", test_env_cwd_stdin);
        g_test_add_func ("/corralctl/timeout", test_timeout);
        g_test_add_func ("/corralctl/errors", test_errors);
        g_test_add_func ("/corralctl/info", test_info);
        g_test_add_func ("/corralctl/refused-calls-said", test_refused_calls_said);
        g_test_add_func ("/corralctl/shell-pty", test_shell_pty);
        g_test_add_func ("/corralctl/stop/ctrl-c-terminal", test_ctrl_c_terminal);
        g_test_add_func ("/corralctl/stop/sigterm-forwarded", test_sigterm_forwarded);
        g_test_add_func ("/corralctl/stop/sigterm-grace", test_sigterm_grace);
        g_test_add_func ("/corralctl/vm/without-libvirt", test_vm_without_libvirt);
        g_test_add_func ("/corralctl/vm/network-off-said", test_vm_network_off_said);
        g_test_add_func ("/corralctl/subcommand-options", test_subcommand_options);
        g_test_add_func ("/corralctl/damaged-policy-before-boot", test_damaged_policy_before_boot);
        g_test_add_func ("/corralctl/changes", test_changes);
        g_test_add_func ("/corralctl/vm/embedded-holder-named", test_embedded_holder_named);
        g_test_add_func ("/corralctl/policy", test_policy);
        g_test_add_func ("/corralctl/screen-refused", test_screen_refused);
        g_test_add_func ("/corralctl/image-signing", test_image_signing);
        g_test_add_func ("/corralctl/image-archive", test_image_archive);
        g_test_add_func ("/corralctl/image-recipe-refused", test_image_recipe_refused);

        return g_test_run ();
}
