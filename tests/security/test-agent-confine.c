/* test-agent-confine.c — the second wall around each command (SECURITY.md A7, A8), through the
 * real corral-agent started locally: every refused system call returns its errno under the
 * filter (confine-probe, in the build folder's tests/) and gets through without it; Landlock keeps writes to the command's own places; the
 * person's way out (confine: false) works. The VM's own wiring (device nodes, /proc, the guest
 * kernel's Landlock) is checked by tests/vm/test-vm-agent.sh.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-util.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static TestAgent *agent;

static CorralRunResult *
run (const char *const *argv, gboolean unconfined)
{
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (GError) error = NULL;
        CorralRunResult *res;

        corral_exec_spec_set_unconfined (spec, unconfined);
        res = test_run (agent->client, spec, 1024 * 1024, &error);
        g_assert_no_error (error);
        return res;
}

static char *
run_shell (const char *script, gboolean unconfined, int *ret_code)
{
        const char *argv[] = { "/bin/sh", "-c", script, NULL };
        g_autoptr (CorralRunResult) res = run (argv, unconfined);

        *ret_code = res->exit_code;
        return g_strndup (g_bytes_get_data (res->stdout_data, NULL),
                          g_bytes_get_size (res->stdout_data));
}

/* "NAME RESULT" lines of confine-probe. */
static GHashTable *
probe (gboolean unconfined)
{
        g_autofree char *path =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "tests", "confine-probe", NULL);
        const char *argv[] = { path, NULL };
        g_autoptr (CorralRunResult) res = NULL;
        GHashTable *h = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
        g_autofree char *text = NULL;
        g_auto (GStrv) lines = NULL;

        res = run (argv, unconfined);
        g_assert_cmpint (res->exit_code, ==, 0);
        text = g_strndup (g_bytes_get_data (res->stdout_data, NULL),
                          g_bytes_get_size (res->stdout_data));
        lines = g_strsplit (text, "\n", -1);
        for (char **l = lines; *l; l++) {
                const char *sp = strchr (*l, ' ');

                if (sp)
                        g_hash_table_insert (h, g_strndup (*l, sp - *l), g_strdup (sp + 1));
        }
        return h;
}

/* Whether this kernel has the 32-bit syscall entry at all: confine-probe run without the wall
 * says "ok", or "absent" where int $0x80 faults (ia32_emulation=0, some paravirtualised hosts).
 * Where it is absent nothing can reach it, filter or not. */
static gboolean
int80_absent (void)
{
        static int absent = -1;

        if (absent < 0) {
                g_autoptr (GHashTable) got = probe (TRUE);
                const char *r = g_hash_table_lookup (got, "int80");

                g_assert_true (g_strcmp0 (r, "ok") == 0 || g_strcmp0 (r, "absent") == 0);
                absent = g_str_equal (r, "absent");
                if (absent)
                        g_test_message ("this kernel has no 32-bit syscall entry");
        }
        return absent;
}

static cJSON *
confinement_info (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (cJSON) info = test_call (agent->client, "info", NULL, &error);
        cJSON *c;

        g_assert_no_error (error);
        c = cJSON_DetachItemFromObject (info, "confinement");
        g_assert_nonnull (c);
        return c;
}

static void
test_info (void)
{
        g_autoptr (cJSON) c = confinement_info ();
        const char *seccomp = cJSON_GetStringValue (cJSON_GetObjectItem (c, "seccomp"));
        const char *landlock = cJSON_GetStringValue (cJSON_GetObjectItem (c, "landlock"));

        g_assert_nonnull (seccomp);
        g_assert_true (g_str_has_prefix (seccomp, "on ("));
        g_assert_nonnull (landlock);
        /* Either on, or said to be missing: never silent. */
        g_assert_true (g_str_has_prefix (landlock, "on (ABI ") ||
                       g_str_has_prefix (landlock, "unavailable: "));
}

/* Every call in the agent's table (as info lists it) comes back with its errno. */
static void
test_refused_calls (void)
{
        g_autoptr (cJSON) c = confinement_info ();
        g_autoptr (GHashTable) got = probe (FALSE);
        const cJSON *refused = cJSON_GetObjectItem (c, "refused");
        const cJSON *item;
        guint n = 0;

        g_assert_true (cJSON_IsObject (refused));
        cJSON_ArrayForEach (item, refused) {
                const char *want = cJSON_GetStringValue (item);
                const char *result = g_hash_table_lookup (got, item->string);

                if (!result)
                        g_error ("confine-probe does not try %s; add it", item->string);
                if (g_strcmp0 (result, want) != 0)
                        g_error ("%s: %s under the filter, expected %s", item->string, result,
                                 want);
                n++;
        }
        g_assert_cmpuint (n, >=, 40);
        /* old ABIs behind bit 31; the query; the 32-bit entry; what must keep working */
        g_assert_cmpstr (g_hash_table_lookup (got, "personality-bit31"), ==, "EPERM");
        g_assert_cmpstr (g_hash_table_lookup (got, "personality-query"), ==, "ok");
        g_assert_cmpstr (g_hash_table_lookup (got, "int80"), ==,
                         int80_absent () ? "absent" : "EPERM");
        g_assert_cmpstr (g_hash_table_lookup (got, "getpid"), ==, "ok");
        g_assert_cmpstr (g_hash_table_lookup (got, "socket-unix"), ==, "ok");
}

/* Without the filter the same calls get through: the refusals above are the filter's. */
static void
test_unconfined_gets_through (void)
{
        g_autoptr (GHashTable) got = probe (TRUE);
        const char *open_to_users[] = { "keyctl", "add_key", "personality", "personality-bit31" };

        for (gsize i = 0; i < G_N_ELEMENTS (open_to_users); i++)
                g_assert_cmpstr (g_hash_table_lookup (got, open_to_users[i]), ==, "ok");
        g_assert_cmpstr (g_hash_table_lookup (got, "int80"), ==, int80_absent () ? "absent" : "ok");
        g_assert_cmpstr (g_hash_table_lookup (got, "clone3"), !=, "ENOSYS");
}

/* The agent answers each refused call and reports which (at most eight names) at exit; the
 * host takes only well-formed names. Without the wall nothing is reported. */
static void
test_refused_reported (void)
{
        g_autofree char *path =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "tests", "confine-probe", NULL);
        const char *argv[] = { path, NULL };
        g_autoptr (CorralRunResult) res = run (argv, FALSE);
        g_autoptr (CorralRunResult) free_res = NULL;

        g_assert_nonnull (res->refused_calls);
        g_assert_cmpuint (g_strv_length (res->refused_calls), ==, 8);
        /* in the order the probe made them */
        g_assert_cmpstr (res->refused_calls[0], ==, "bpf");
        g_assert_cmpstr (res->refused_calls[1], ==, "userfaultfd");
        g_assert_false (g_strv_contains ((const char *const *) res->refused_calls, "clone3"));
        free_res = run (argv, TRUE);
        g_assert_null (free_res->refused_calls);
}

/* Commands share one spawner and one seccomp listener: a refused call counts for the command
 * whose tree made it, also from a process that left the command's session, never for another
 * command running at the same time. */
static void
test_refused_per_command (void)
{
        g_autofree char *path =
                g_build_filename (g_getenv ("CORRAL_BUILD_DIR"), "tests", "confine-probe", NULL);
        const char *probe_argv[] = { path, NULL };
        const char *sleep_argv[] = { "/bin/sleep", "2", NULL };
        g_autofree char *script = g_strdup_printf ("setsid '%s' > /dev/null; true", path);
        const char *setsid_argv[] = { "/bin/sh", "-c", script, NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (sleep_argv);
        g_autoptr (CorralProcess) quiet = NULL;
        g_autoptr (CorralRunResult) res = NULL, left = NULL;
        g_autoptr (GError) error = NULL;

        quiet = test_spawn (agent->client, spec, &error);
        g_assert_no_error (error);
        res = run (probe_argv, FALSE);
        g_assert_nonnull (res->refused_calls);
        g_assert_cmpstr (res->refused_calls[0], ==, "bpf");
        left = run (setsid_argv, FALSE);
        g_assert_cmpint (left->exit_code, ==, 0);
        g_assert_nonnull (left->refused_calls);
        g_assert_cmpstr (left->refused_calls[0], ==, "bpf");
        g_assert_true (test_process_wait (quiet, &error));
        g_assert_no_error (error);
        g_assert_null (corral_process_get_refused_calls (quiet));
}

/* A command of another user has another home, so another ruleset and another spawner; going
 * back and forth, each command is confined with its own: root may write its home and not the
 * build folder (which its rights would allow). */
static void
test_ruleset_per_home (void)
{
        g_autoptr (cJSON) c = confinement_info ();
        const char *landlock = cJSON_GetStringValue (cJSON_GetObjectItem (c, "landlock"));
        const char *build = g_getenv ("CORRAL_BUILD_DIR");
        g_autofree char *outside = NULL, *script = NULL;
        g_autoptr (TestAgent) own = NULL;

        if (!g_str_has_prefix (landlock, "on") || getuid () != 0) {
                g_test_skip ("needs Landlock and root (commands of two users)");
                return;
        }
        if (g_str_has_prefix (build, "/tmp/") || g_str_has_prefix (build, "/var/tmp/") ||
            g_str_has_prefix (build, "/home/") || g_str_has_prefix (build, "/root/")) {
                g_test_skip ("the build folder is in a place commands may write");
                return;
        }
        outside = g_build_filename (build, "confine-home-XXXXXX", NULL);
        g_assert_nonnull (g_mkdtemp_full (outside, 0755));
        script = g_strdup_printf ("if echo x > '%s/new' 2>/dev/null; then echo wrote-outside; "
                                  "fi; f=\"$HOME/.corral-confine-$$\"; "
                                  "if echo x > \"$f\" 2>/dev/null; then rm -f \"$f\"; "
                                  "echo wrote-home; fi",
                                  outside);
        /* An agent of its own, whose first command is not root's. */
        own = test_agent_start (0, NULL);
        for (int round = 0; round < 2; round++) {
                const char *users[] = { "nobody", "root" };

                for (unsigned u = 0; u < G_N_ELEMENTS (users); u++) {
                        const char *argv[] = { "/bin/sh", "-c", script, NULL };
                        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
                        g_autoptr (CorralRunResult) res = NULL;
                        g_autoptr (GError) error = NULL;
                        g_autofree char *out = NULL;

                        corral_exec_spec_set_user (spec, users[u]);
                        res = test_run (own->client, spec, 1024 * 1024, &error);
                        g_assert_no_error (error);
                        g_assert_cmpint (res->exit_code, ==, 0);
                        out = g_strdup_printf (
                                "%.*s", (int) g_bytes_get_size (res->stdout_data),
                                (const char *) g_bytes_get_data (res->stdout_data, NULL));
                        g_assert_null (strstr (out, "wrote-outside"));
                        /* root's home is one of root's places, not nobody's */
                        if (g_str_equal (users[u], "root"))
                                g_assert_nonnull (strstr (out, "wrote-home"));
                }
        }
        g_free (script);
        script = g_strdup_printf ("rm -rf '%s'", outside);
        g_assert_true (g_spawn_command_line_sync (script, NULL, NULL, NULL, NULL));
}

static void
test_no_new_privs (void)
{
        int code;
        g_autofree char *out =
                run_shell ("grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status", FALSE, &code);
        g_autofree char *free_out = NULL;

        g_assert_cmpint (code, ==, 0);
        g_assert_nonnull (strstr (out, "NoNewPrivs:\t1"));
        g_assert_nonnull (strstr (out, "Seccomp:\t2"));
        free_out = run_shell ("grep -E '^Seccomp:' /proc/self/status", TRUE, &code);
        g_assert_nonnull (strstr (free_out, "Seccomp:\t0"));
}

/* Writes stay in /tmp, /var/tmp, the home and /workspace; the rest is read-only; devices other
 * than the harmless ones cannot be opened. */
static void
test_landlock (void)
{
        g_autoptr (cJSON) c = confinement_info ();
        const char *landlock = cJSON_GetStringValue (cJSON_GetObjectItem (c, "landlock"));
        const char *build = g_getenv ("CORRAL_BUILD_DIR");
        g_autofree char *outside = NULL, *file = NULL, *script = NULL, *out = NULL;
        int code;

        if (!g_str_has_prefix (landlock, "on")) {
                g_test_skip ("this kernel has no Landlock");
                return;
        }
        g_assert_nonnull (build);
        if (g_str_has_prefix (build, "/tmp/") || g_str_has_prefix (build, "/var/tmp/") ||
            g_str_has_prefix (build, "/home/")) {
                g_test_skip ("the build folder is in a place commands may write");
                return;
        }
        /* A folder anyone may write, outside the command's places. */
        outside = g_build_filename (build, "confine-outside-XXXXXX", NULL);
        g_assert_nonnull (g_mkdtemp_full (outside, 0777));
        g_assert_cmpint (g_chmod (outside, 0777), ==, 0);
        file = g_build_filename (outside, "readable", NULL);
        g_assert_true (g_file_set_contents (file, "seen\n", -1, NULL));
        g_assert_cmpint (g_chmod (file, 0666), ==, 0);

        script = g_strdup_printf (
                "cat '%s/readable'; "
                "if echo x > '%s/new' 2>/dev/null; then echo wrote-outside; fi; "
                "if echo x >> '%s/readable' 2>/dev/null; then echo appended-outside; fi; "
                "t=$(mktemp) && echo x > \"$t\" && rm \"$t\" && echo wrote-tmp; "
                "echo x > /dev/null && echo wrote-null; "
                "if [ -e /dev/fuse ] && (: < /dev/fuse) 2>/dev/null; then echo opened-fuse; fi; "
                "true",
                outside, outside, outside);
        out = run_shell (script, FALSE, &code);
        g_assert_cmpint (code, ==, 0);
        g_assert_cmpstr (out, ==, "seen\nwrote-tmp\nwrote-null\n");
        g_clear_pointer (&out, g_free);

        /* the same without the wall: the folder is writable, so Landlock was what refused */
        out = run_shell (script, TRUE, &code);
        g_assert_nonnull (strstr (out, "wrote-outside"));
        g_clear_pointer (&out, g_free);

        g_free (script);
        script = g_strdup_printf ("rm -rf '%s'", outside);
        g_assert_true (g_spawn_command_line_sync (script, NULL, NULL, NULL, NULL));
}

int
main (int argc, char **argv)
{
        int r;

        g_test_init (&argc, &argv, NULL);
        agent = test_agent_start (0, NULL);
        g_test_add_func ("/agent-confine/info", test_info);
        g_test_add_func ("/agent-confine/refused-calls", test_refused_calls);
        g_test_add_func ("/agent-confine/unconfined-gets-through", test_unconfined_gets_through);
        g_test_add_func ("/agent-confine/refused-reported", test_refused_reported);
        g_test_add_func ("/agent-confine/refused-per-command", test_refused_per_command);
        g_test_add_func ("/agent-confine/ruleset-per-home", test_ruleset_per_home);
        g_test_add_func ("/agent-confine/no-new-privs", test_no_new_privs);
        g_test_add_func ("/agent-confine/landlock", test_landlock);
        r = g_test_run ();
        test_agent_free (agent);
        return r;
}
