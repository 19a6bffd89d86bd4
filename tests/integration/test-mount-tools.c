/* test-mount-tools.c — real programs in a read-write share: git, python3, cp -a, tar.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <unistd.h>

static char *host_dir;
static MountHarness *harness;
static char *share;

#define REQUIRE_MOUNT()                                                                            \
        do {                                                                                       \
                if (!harness) {                                                                    \
                        g_test_skip ("no mount");                                                  \
                        return;                                                                    \
                }                                                                                  \
        } while (0)

static char *
run_in (const char *cwd, const char *const *argv)
{
        g_autoptr (GError) error = NULL;
        char *out = NULL;

        if (!mount_harness_run (cwd, argv, &out, &error))
                g_error ("%s", error->message);
        return out;
}

static gboolean
have_program (const char *name)
{
        g_autofree char *path = g_find_program_in_path (name);

        if (!path)
                g_test_skip_printf ("%s is not installed", name);
        return path != NULL;
}

static void
test_git (void)
{
        g_autofree char *repo = NULL, *clone = NULL, *out = NULL, *file = NULL, *log = NULL;
        /* git refuses repositories owned by someone else; the mount shows the mount point's
         * owner, which is us. */
        const char *git[] = { "git", "-c", "user.name=Corral Test", "-c",
                              "user.email=t@example.org", "-c", "init.defaultBranch=main",
                              /* as the guest images set it: shares refuse hooks/ (F19) */
                              "-c", "init.templateDir=", NULL };

        REQUIRE_MOUNT ();
        if (!have_program ("git"))
                return;
        repo = g_build_filename (share, "repo", NULL);
        clone = g_build_filename (share, "clone", NULL);
        g_assert_cmpint (g_mkdir (repo, 0755), ==, 0);
        file = g_build_filename (repo, "README", NULL);
        g_assert_true (g_file_set_contents (file, "hello\n", -1, NULL));
        {
                g_autofree char *sub = g_build_filename (repo, "src", NULL);
                g_autofree char *c = g_build_filename (repo, "src", "main.c", NULL);

                g_assert_cmpint (g_mkdir (sub, 0755), ==, 0);
                g_assert_true (
                        g_file_set_contents (c, "int main (void) { return 0; }\n", -1, NULL));
        }

#define GIT(cwd, ...)                                                                              \
        run_in (cwd, (const char *const[]){ git[0], git[1], git[2], git[3], git[4], git[5],        \
                                            git[6], git[7], git[8], __VA_ARGS__, NULL })
        g_free (GIT (repo, "init", "-q"));
        g_free (GIT (repo, "add", "-A"));
        g_free (GIT (repo, "commit", "-q", "-m", "first"));
        out = GIT (repo, "status", "--porcelain");
        g_assert_cmpstr (out, ==, "");
        g_clear_pointer (&out, g_free);

        /* A change is seen, committed, and the tree is clean again. */
        g_assert_true (g_file_set_contents (file, "hello again\n", -1, NULL));
        out = GIT (repo, "status", "--porcelain");
        g_assert_cmpstr (out, ==, " M README\n");
        g_clear_pointer (&out, g_free);
        g_free (GIT (repo, "commit", "-q", "-a", "-m", "second"));
        out = GIT (repo, "status", "--porcelain");
        g_assert_cmpstr (out, ==, "");
        g_clear_pointer (&out, g_free);
        g_free (GIT (repo, "gc", "-q"));
        g_free (GIT (repo, "fsck", "--no-progress"));

        g_free (GIT (share, "clone", "-q", repo, clone));
        log = GIT (clone, "log", "--format=%s");
        g_assert_cmpstr (log, ==, "second\nfirst\n");
        out = GIT (clone, "status", "--porcelain");
        g_assert_cmpstr (out, ==, "");
#undef GIT
}

static void
test_python (void)
{
        g_autofree char *dir = NULL, *out = NULL;
        const char *script =
                "import os, json, shutil, sqlite3, tempfile\n"
                "os.makedirs('py/a/b', exist_ok=True)\n"
                "with open('py/a/b/data.json', 'w') as f: json.dump({'n': list(range(1000))}, f)\n"
                "with open('py/a/b/data.json') as f: assert len(json.load(f)['n']) == 1000\n"
                "with open('py/log.txt', 'a') as f:\n"
                "    for i in range(100): f.write('line %d\\n' % i)\n"
                "shutil.copy2('py/log.txt', 'py/copy.txt')\n"
                "shutil.copytree('py/a', 'py/tree')\n"
                "with tempfile.NamedTemporaryFile('w', dir='py', delete=False) as t: t.write('x')\n"
                "os.replace(t.name, 'py/replaced.txt')\n"
                "db = sqlite3.connect('py/test.db')\n"
                "db.execute('create table t (x)')\n"
                "db.executemany('insert into t values (?)', [(i,) for i in range(500)])\n"
                "db.commit()\n"
                "assert db.execute('select count(*) from t').fetchone()[0] == 500\n"
                "db.close()\n"
                "shutil.rmtree('py/tree')\n"
                "print(sorted(os.listdir('py')))\n";

        REQUIRE_MOUNT ();
        if (!have_program ("python3"))
                return;
        dir = g_strdup (share);
        out = run_in (dir, (const char *const[]){ "python3", "-c", script, NULL });
        g_assert_cmpstr (out, ==, "['a', 'copy.txt', 'log.txt', 'replaced.txt', 'test.db']\n");
}

static void
test_cp_tar (void)
{
        g_autofree char *tree = NULL, *copy = NULL, *back = NULL, *tarball = NULL, *out = NULL;
        g_autofree char *outside = g_dir_make_tmp ("corral-out-XXXXXX", NULL);

        REQUIRE_MOUNT ();
        tree = g_build_filename (share, "tree", NULL);
        copy = g_build_filename (share, "tree-copy", NULL);
        back = g_build_filename (outside, "back", NULL);
        tarball = g_build_filename (outside, "t.tar", NULL);
        g_assert_cmpint (g_mkdir_with_parents (tree, 0755), ==, 0);
        {
                g_autofree char *f = g_build_filename (tree, "f.txt", NULL);
                g_autofree char *l = g_build_filename (tree, "l", NULL);

                g_assert_true (g_file_set_contents (f, "cp me", -1, NULL));
                g_assert_cmpint (symlink ("f.txt", l), ==, 0);
        }
        /* cp -a inside the share, out of it and back: modes, times and links, no xattr
         * complaints. */
        g_free (run_in (NULL, (const char *const[]){ "cp", "-a", tree, copy, NULL }));
        g_free (run_in (NULL, (const char *const[]){ "cp", "-a", copy, back, NULL }));
        out = run_in (NULL, (const char *const[]){ "diff", "-r", tree, back, NULL });
        g_assert_cmpstr (out, ==, "");
        g_free (run_in (NULL,
                        (const char *const[]){ "tar", "-C", share, "-cf", tarball, "tree", NULL }));
        g_free (run_in (NULL, (const char *const[]){ "rm", "-rf", tree, NULL }));
        g_free (run_in (NULL, (const char *const[]){ "tar", "-C", share, "-xf", tarball, NULL }));
        g_clear_pointer (&out, g_free);
        out = run_in (NULL, (const char *const[]){ "diff", "-r", tree, back, NULL });
        g_assert_cmpstr (out, ==, "");
        g_free (run_in (NULL, (const char *const[]){ "rm", "-rf", outside, NULL }));
}

int
main (int argc, char **argv)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;
        const char *rm[] = { "rm", "-rf", NULL, NULL };
        int ret;

        g_test_init (&argc, &argv, NULL);
        host_dir = g_dir_make_tmp ("corral-share-tools-XXXXXX", &error);
        g_assert_no_error (error);
        spec = g_strdup_printf ("work:rw:%s", host_dir);
        harness = mount_harness_new ((const char *const[]){ spec, NULL }, &error);
        if (error && !g_error_matches (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED))
                g_error ("%s", error->message);
        if (harness)
                share = mount_harness_path (harness, "work", NULL);

        g_test_add_func ("/mount/tools/git", test_git);
        g_test_add_func ("/mount/tools/python", test_python);
        g_test_add_func ("/mount/tools/cp-tar", test_cp_tar);
        ret = g_test_run ();

        mount_harness_free (harness);
        rm[2] = host_dir;
        mount_harness_run (NULL, rm, NULL, NULL);
        g_free (share);
        g_free (host_dir);
        return ret;
}
