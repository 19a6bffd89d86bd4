/* test-agent-flood.c — a guest printing 1 GiB: every byte arrives, host memory stays bounded.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "test-util.h"

#include <stdio.h>

#define GIB ((guint64) 1024 * 1024 * 1024)
#define RSS_LIMIT_KB (64 * 1024)

typedef struct {
        guint64 bytes;
        guint64 next_check;
        guint64 max_rss_kb;
        gboolean all_zero;
} Flood;

static guint64
rss_kb (void)
{
        g_autofree char *status = NULL;
        const char *line;

        g_assert_true (g_file_get_contents ("/proc/self/status", &status, NULL, NULL));
        line = strstr (status, "VmRSS:");
        g_assert_nonnull (line);
        return g_ascii_strtoull (line + strlen ("VmRSS:"), NULL, 10);
}

static void
on_output (CorralProcess *proc, guint stream, GBytes *bytes, Flood *flood)
{
        gsize len;
        const guint8 *data = g_bytes_get_data (bytes, &len);

        g_assert_cmpuint (stream, ==, CORRAL_PROCESS_STDOUT);
        if (flood->all_zero && (data[0] != 0 || data[len - 1] != 0))
                flood->all_zero = FALSE;
        flood->bytes += len;
        if (flood->bytes >= flood->next_check) {
                flood->max_rss_kb = MAX (flood->max_rss_kb, rss_kb ());
                flood->next_check += 32 * 1024 * 1024;
        }
}

/* 1 GiB through memcheck would take an hour, and its RSS is not ours. */
static gboolean
under_valgrind (void)
{
        const char *preload = g_getenv ("LD_PRELOAD");

        return preload && strstr (preload, "valgrind");
}

/* gcc says __SANITIZE_ADDRESS__, clang __has_feature (address_sanitizer). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAS_ASAN 1
#endif
#endif
#ifndef HAS_ASAN
#define HAS_ASAN 0
#endif

static void
test_flood (void)
{
        g_autoptr (TestAgent) agent = test_agent_start (0, NULL);
        const char *argv[] = { "head", "-c", "1073741824", "/dev/zero", NULL };
        g_autoptr (CorralExecSpec) spec = corral_exec_spec_new_argv (argv);
        g_autoptr (CorralProcess) proc = NULL;
        g_autoptr (GError) error = NULL;
        Flood flood = { 0, 0, 0, TRUE };
        gint64 start = g_get_monotonic_time ();

        if (under_valgrind ()) {
                g_test_skip ("not under valgrind");
                return;
        }

        proc = test_spawn (agent->client, spec, &error);
        g_assert_no_error (error);
        g_signal_connect (proc, "output", G_CALLBACK (on_output), &flood);
        g_assert_true (test_process_wait (proc, &error));
        g_assert_no_error (error);
        flood.max_rss_kb = MAX (flood.max_rss_kb, rss_kb ());
        g_test_message ("1 GiB in %.1f s, max VmRSS %" G_GUINT64_FORMAT " KiB",
                        (g_get_monotonic_time () - start) / 1e6, flood.max_rss_kb);
        g_assert_cmpint (corral_process_get_exit_code (proc), ==, 0);
        g_assert_cmpuint (flood.bytes, ==, GIB);
        g_assert_true (flood.all_zero);
#if !defined(__SANITIZE_ADDRESS__) && !HAS_ASAN
        /* ASan holds freed memory in quarantine: RSS says nothing there. */
        g_assert_cmpuint (flood.max_rss_kb, <, RSS_LIMIT_KB);
#endif
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/agent-flood/one-gib", test_flood);
        return g_test_run ();
}
