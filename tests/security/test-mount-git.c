/* test-mount-git.c — SECURITY-TESTS.md 32 through a real FUSE mount: git-attacks.sh plays the
 * hostile guest on the mount, then the person's git on the host folder (SECURITY.md F19).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>

#include "mount-harness.h"

/* The person's repository, with git's default template (sample hooks) and a remote. */
static void
make_host_repos (const char *share, const char *remote_dir)
{
        g_autofree char *script = g_strdup_printf (
                "set -e; export HOME=%s GIT_CONFIG_NOSYSTEM=1;"
                "g='git -c user.name=Person -c user.email=p@example.org -c "
                "init.defaultBranch=main';"
                "$g init -q --bare '%s/remote.git';"
                "$g init -q '%s/repo'; cd '%s/repo'; mkdir src; echo hello > README;"
                "echo 'int x;' > src/x.c; $g add -A; $g commit -qm first;"
                "$g remote add origin '%s/remote.git'; $g push -q origin main",
                remote_dir, share, share, share, share);
        const char *argv[] = { "sh", "-c", script, NULL };
        g_autoptr (GError) error = NULL;

        if (!mount_harness_run (NULL, argv, NULL, &error))
                g_error ("%s", error->message);
}

static void
test_git_attacks (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp ("corral-git-XXXXXX", &error);
        g_autofree char *share = g_build_filename (dir, "share", NULL);
        g_autofree char *markers = g_build_filename (dir, "markers", NULL);
        g_autofree char *spec = g_strdup_printf ("s:rw:%s", share);
        g_autofree char *script = g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "tests",
                                                    "security", "git-attacks.sh", NULL);
        g_autofree char *mnt = NULL, *out = NULL, *cleanup = NULL;
        const char *specs[] = { spec, NULL };
        g_autoptr (MountHarness) h = NULL;
        g_autofree char *git = g_find_program_in_path ("git");

        g_assert_no_error (error);
        if (!git) {
                g_test_skip ("git is not installed");
                return;
        }
        g_assert_cmpint (g_mkdir (share, 0755), ==, 0);
        g_assert_cmpint (g_mkdir (markers, 0755), ==, 0);
        make_host_repos (share, dir);
        h = mount_harness_new (specs, &error);
        if (!h) {
                mount_harness_skip_or_fail (error);
                return;
        }
        mnt = mount_harness_path (h, "s", NULL);
        {
                const char *argv[] = { "bash", script, mnt, share, markers, NULL };
                gboolean ok = mount_harness_run (NULL, argv, &out, &error);
                g_test_message ("%s", out ? out : "");
                if (!ok)
                        g_error ("git-attacks.sh: %s\n%s", error->message, out ? out : "");
        }
        {
                g_autofree char *audit = NULL;
                g_assert_true (g_file_get_contents (h->audit_path, &audit, NULL, NULL));
                g_assert_nonnull (strstr (audit, "\"rule\":\"git-metadata\""));
                g_assert_nonnull (strstr (audit, "\"rule\":\"protected-path\""));
        }
        g_clear_pointer (&h, mount_harness_free);
        cleanup = g_strdup_printf ("rm -rf '%s'", dir);
        g_assert_cmpint (system (cleanup), ==, 0);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/mount-git/host-runs-nothing", test_git_attacks);
        return g_test_run ();
}
