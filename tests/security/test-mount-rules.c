/* test-mount-rules.c — SECURITY-TESTS.md items 32, 33, 36 and 37 against the real file server,
 * driven like a hostile guest: git metadata as an allowlist (F19), hidden paths and Corral's
 * own folders (F20), links that must keep resolving inside the share on the host (F3).
 *
 * Every test runs twice: with openat2 and with the per-component fallback walk.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-client.h"
#include "fs-paths.h"
#include "fs-resolve.h"
#include "mount-test-util.h"

static FsEntry
walk (FsClient *c, const char *path)
{
        FsEntry e;
        int r = fs_client_walk (c, path, &e);

        if (r < 0)
                g_error ("lookup %s: %s", path, g_strerror (-r));
        return e;
}

static void
assert_refused_at (int line, FsClient *c, int r, int err, const char *rule)
{
        if (r != -err || g_strcmp0 (c->last_rule, rule) != 0)
                g_error ("line %d: expected %s (%s), got %s (%s)", line, g_strerror (err), rule,
                         r ? g_strerror (-r) : "success", c->last_rule);
}
#define assert_refused(c, r, err, rule) assert_refused_at (__LINE__, c, r, err, rule)
#define GIT(expr) assert_refused (c, (expr), EPERM, "git-metadata")
#define OK(expr) g_assert_cmpint ((expr), ==, 0)

/* Creates a file through the protocol, or returns the refusal. */
static int
create (FsClient *c, uint64_t dir, const char *name, const char *content)
{
        uint64_t h;
        int r = fs_client_create (c, dir, name, 0644, FS_O_WRONLY, NULL, &h);

        if (r < 0)
                return r;
        if (content)
                g_assert_cmpint (fs_client_write (c, h, 0, content, strlen (content)), ==,
                                 (int) strlen (content));
        fs_client_release (c, h);
        return 0;
}

/* The names a READDIRPLUS of dir lists, as one string "a b c ". */
static char *
list_names (FsClient *c, uint64_t dir)
{
        GString *out = g_string_new (NULL);
        uint64_t h, offset = 0;

        {
                FsRequest q = { .op = FS_OP_OPENDIR, .node = dir };
                FsReader r;
                g_assert_cmpint (fs_client_call (c, &q, &r), ==, 0);
                h = fs_read_u64 (&r);
        }
        for (;;) {
                FsRequest q = {
                        .op = FS_OP_READDIRPLUS, .handle = h, .offset = offset, .size = 65536
                };
                FsReader r;
                uint32_t count;

                g_assert_cmpint (fs_client_call (c, &q, &r), ==, 0);
                count = fs_read_u32 (&r);
                if (count == 0)
                        break;
                for (uint32_t i = 0; i < count; i++) {
                        FsDirent d;
                        d.next_offset = fs_read_u64 (&r);
                        d.type = fs_read_u32 (&r);
                        d.name = fs_read_str (&r, FS_MAX_NAME);
                        fs_read_entry (&r, &d.entry);
                        g_assert_false (r.bad);
                        g_string_append_len (out, d.name.ptr, (gssize) d.name.len);
                        g_string_append_c (out, ' ');
                        offset = d.next_offset;
                }
        }
        {
                FsRequest q = { .op = FS_OP_RELEASEDIR, .handle = h };
                fs_client_call (c, &q, NULL);
        }
        return g_string_free (out, FALSE);
}

/* 32. git metadata in a repository the person made ---------------------------------------- */

static void
test_git_existing (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autofree char *before = NULL, *after = NULL;
        FsEntry share, git, hooks, objects, refs;
        uint64_t h;

        fs_client_host_write (c, ".git/HEAD", "ref: refs/heads/main\n");
        fs_client_host_write (c, ".git/config", "[core]\n\tbare = false\n");
        fs_client_host_write (c, ".git/hooks/pre-commit.sample", "#!/bin/sh\n");
        fs_client_host_write (c, ".git/objects/ab/cdef", "blob");
        fs_client_host_write (c, ".git/refs/heads/main", "0000\n");
        fs_client_host_write (c, ".git/modules/sub/config", "[core]\n");
        fs_client_host_write (c, ".git/worktrees/w/gitdir", "/elsewhere\n");
        fs_client_host_write (c, "src/main.c", "int main;\n");
        before = fs_client_tree_digest (c->share);
        share = walk (c, "s");
        git = walk (c, "s/.git");
        hooks = walk (c, "s/.git/hooks");

        /* what runs or redirects: never */
        GIT (create (c, hooks.node, "pre-commit", "#!/bin/sh\ntouch /tmp/pwned\n"));
        GIT (fs_client_open (c, walk (c, "s/.git/hooks/pre-commit.sample").node, FS_O_RDWR, &h));
        GIT (fs_client_rename (c, hooks.node, "pre-commit.sample", hooks.node, "pre-commit", 0));
        GIT (fs_client_open (c, walk (c, "s/.git/config").node, FS_O_WRONLY, &h));
        GIT (fs_client_open (c, walk (c, "s/.git/config").node, FS_O_WRONLY | FS_O_TRUNC, &h));
        GIT (create (c, git.node, "config.lock", "[core]\n\tfsmonitor = x\n"));
        GIT (fs_client_unlink (c, git.node, "config"));
        GIT (create (c, git.node, "commondir", "../../evil\n"));
        GIT (create (c, git.node, "gitdir", "/evil\n"));
        GIT (create (c, git.node, "config.worktree", "[core]\n"));
        GIT (fs_client_mkdir (c, walk (c, "s/.git/modules").node, "other", 0755, NULL));
        GIT (create (c, walk (c, "s/.git/modules/sub").node, "HEAD", "x"));
        GIT (fs_client_open (c, walk (c, "s/.git/modules/sub/config").node, FS_O_WRONLY, &h));
        GIT (create (c, walk (c, "s/.git/worktrees/w").node, "commondir", "x"));
        GIT (fs_client_mkdir (c, git.node, "info", 0755, NULL) == 0
                     ? create (c, walk (c, "s/.git/info").node, "attributes", "* diff=evil\n")
                     : -EIO);
        GIT (fs_client_symlink (c, git.node, "packed-refs", "HEAD", NULL));
        GIT (fs_client_mkdir (c, git.node, "whatever", 0755, NULL));
        {
                FsSetattr set = { .valid = FS_SET_MODE, .mode = 0755 };
                GIT (fs_client_setattr (c, walk (c, "s/.git/hooks/pre-commit.sample").node, &set));
        }
        /* a .git file or link anywhere, and a folder moved onto .git */
        GIT (create (c, walk (c, "s/src").node, ".git", "gitdir: /tmp/evil\n"));
        GIT (create (c, walk (c, "s/src").node, ".GIT", "gitdir: /tmp/evil\n"));
        GIT (fs_client_symlink (c, walk (c, "s/src").node, ".git", "../.git", NULL));
        OK (fs_client_mkdir (c, share.node, "prep", 0755, NULL));
        GIT (fs_client_rename (c, share.node, "prep", walk (c, "s/src").node, ".git", 0));
        GIT (fs_client_rename (c, share.node, "prep", share.node, ".git", FS_RENAME_EXCHANGE));
        /* a prepared hooks folder moved in; a folder moved into info/ */
        OK (fs_client_mkdir (c, walk (c, "s/prep").node, "hooks", 0755, NULL));
        GIT (fs_client_rename (c, walk (c, "s/prep").node, "hooks", walk (c, "s/.git").node,
                               "hooks-new", 0));
        OK (fs_client_rmdir (c, walk (c, "s/prep").node, "hooks"));
        GIT (fs_client_rename (c, share.node, "prep", walk (c, "s/.git/info").node, "sub", 0));
        OK (fs_client_rmdir (c, walk (c, "s/.git").node, "info"));
        OK (fs_client_rmdir (c, share.node, "prep"));
        after = fs_client_tree_digest (c->share);
        g_assert_cmpstr (before, ==, after);

        /* everyday git work: objects, refs, index, HEAD through its lock file */
        objects = walk (c, "s/.git/objects");
        refs = walk (c, "s/.git/refs/heads");
        OK (fs_client_mkdir (c, objects.node, "12", 0755, NULL));
        OK (create (c, walk (c, "s/.git/objects/12").node, "tmp_obj_x", "blob"));
        OK (fs_client_rename (c, walk (c, "s/.git/objects/12").node, "tmp_obj_x",
                              walk (c, "s/.git/objects/12").node, "3456", 0));
        OK (create (c, refs.node, "topic.lock", "1111\n"));
        OK (fs_client_rename (c, refs.node, "topic.lock", refs.node, "topic", 0));
        OK (create (c, git.node, "index.lock", "DIRC"));
        OK (fs_client_rename (c, git.node, "index.lock", git.node, "index", 0));
        OK (create (c, git.node, "HEAD.lock", "ref: refs/heads/topic\n"));
        OK (fs_client_rename (c, git.node, "HEAD.lock", git.node, "HEAD", 0));
        OK (create (c, git.node, "COMMIT_EDITMSG", "msg\n"));
        OK (fs_client_mkdir (c, git.node, "info", 0755, NULL));
        OK (create (c, walk (c, "s/.git/info").node, "exclude", "*.o\n"));
        OK (fs_client_unlink (c, walk (c, "s/.git/objects/ab").node, "cdef"));
        {
                g_autofree char *audit = fs_client_audit_text (c);
                g_assert_nonnull (strstr (audit, "\"rule\":\"git-metadata\""));
        }
}

/* 32, 33. A repository the guest creates: its config is checked, nothing runs ---------------- */

static void
test_git_created (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        const char *good = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n"
                           "\tbare = false\n\tlogallrefupdates = true\n";
        FsEntry share, repo, git;
        g_autofree char *config = NULL;
        uint64_t h;

        share = walk (c, "s");
        OK (fs_client_mkdir (c, share.node, "new", 0755, &repo));
        OK (fs_client_mkdir (c, repo.node, ".git", 0755, &git));
        /* git init with an empty template folder: no hooks/ */
        GIT (fs_client_mkdir (c, git.node, "hooks", 0755, NULL));
        OK (fs_client_mkdir (c, git.node, "objects", 0755, NULL));
        OK (fs_client_mkdir (c, git.node, "refs", 0755, NULL));
        OK (create (c, git.node, "HEAD", "ref: refs/heads/main\n"));
        /* config: only a whole, checked replace through config.lock */
        GIT (create (c, git.node, "config", good));
        OK (create (c, git.node, "config.lock", good));
        OK (fs_client_rename (c, git.node, "config.lock", git.node, "config", 0));
        config = fs_client_host_read (c, "new/.git/config");
        g_assert_cmpstr (config, ==, good);
        GIT (fs_client_open (c, walk (c, "s/new/.git/config").node, FS_O_WRONLY, &h));
        {
                FsSetattr set = { .valid = FS_SET_SIZE, .size = 0 };
                GIT (fs_client_setattr (c, walk (c, "s/new/.git/config").node, &set));
        }
        /* git config core.fsmonitor / core.hooksPath / include.path: refused, config kept */
        {
                const char *evil[] = {
                        "[core]\n\tfsmonitor = touch /tmp/pwned\n",
                        "[core]\n\thooksPath = /tmp\n",
                        "[include]\n\tpath = /tmp/evil\n",
                        "[alias]\n\tst = !touch /tmp/pwned\n",
                        "[remote \"o\"]\n\turl = ext::sh -c touch% /tmp/pwned\n",
                };
                for (guint i = 0; i < G_N_ELEMENTS (evil); i++) {
                        g_autofree char *text = g_strconcat (good, evil[i], NULL);
                        g_autofree char *now = NULL;
                        OK (create (c, git.node, "config.lock", text));
                        GIT (fs_client_rename (c, git.node, "config.lock", git.node, "config", 0));
                        OK (fs_client_unlink (c, git.node, "config.lock"));
                        now = fs_client_host_read (c, "new/.git/config");
                        g_assert_cmpstr (now, ==, good);
                }
        }
        /* The text checked is the text that stays: a lock file still open for writing cannot
         * become the config (its writer could change it after the check). */
        {
                uint64_t wh;
                OK (fs_client_create (c, git.node, "config.lock", 0644, FS_O_WRONLY, NULL, &wh));
                g_assert_cmpint (fs_client_write (c, wh, 0, good, strlen (good)), ==,
                                 (int) strlen (good));
                GIT (fs_client_rename (c, git.node, "config.lock", git.node, "config", 0));
                fs_client_release (c, wh);
                OK (fs_client_rename (c, git.node, "config.lock", git.node, "config", 0));
        }
        /* A rename of the same text from anywhere else is judged the same way. */
        OK (create (c, share.node, "prepared", "[core]\n\tpager = evil\n"));
        GIT (fs_client_rename (c, share.node, "prepared", git.node, "config", 0));
        /* no links, no hooks, no modules even here */
        GIT (fs_client_symlink (c, git.node, "packed-refs", "HEAD", NULL));
        GIT (fs_client_mkdir (c, git.node, "modules", 0755, NULL));
        GIT (create (c, git.node, "commondir", ".."));
        /* removing its own config is allowed (it is the guest's repository) */
        OK (fs_client_unlink (c, git.node, "config"));
}

/* 32. Any folder with a HEAD is a git directory to git ------------------------------------- */

static void
test_git_bare (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        FsEntry share, x, y;

        share = walk (c, "s");
        /* config first, then HEAD: the HEAD is refused */
        OK (fs_client_mkdir (c, share.node, "x", 0755, &x));
        OK (fs_client_mkdir (c, x.node, "objects", 0755, NULL));
        OK (fs_client_mkdir (c, x.node, "refs", 0755, NULL));
        OK (create (c, x.node, "config", "[core]\n\tfsmonitor = evil\n"));
        GIT (create (c, x.node, "HEAD", "ref: refs/heads/main\n"));
        GIT (fs_client_mkdir (c, x.node, "HEAD", 0755, NULL));
        OK (create (c, share.node, "head-elsewhere", "ref: refs/heads/main\n"));
        GIT (fs_client_rename (c, share.node, "head-elsewhere", x.node, "HEAD", 0));
        /* HEAD first, then config or hooks: refused as in any git directory */
        OK (fs_client_mkdir (c, share.node, "y", 0755, &y));
        OK (create (c, y.node, "HEAD", "ref: refs/heads/main\n"));
        GIT (create (c, y.node, "config", "[core]\n"));
        GIT (fs_client_mkdir (c, y.node, "hooks", 0755, NULL));
        GIT (create (c, y.node, "commondir", "."));
        OK (fs_client_mkdir (c, y.node, "objects", 0755, NULL));
        /* the share root itself, and a bare repository the person made */
        GIT (create (c, share.node, "config", "x") == 0 ? create (c, share.node, "HEAD", "x")
                                                        : -EIO);
        fs_client_host_write (c, "backup.git/HEAD", "ref: refs/heads/main\n");
        fs_client_host_write (c, "backup.git/hooks/README", "sample\n");
        GIT (create (c, walk (c, "s/backup.git/hooks").node, "post-update", "#!/bin/sh\n"));
        GIT (create (c, walk (c, "s/backup.git").node, "config", "[core]\n"));
}

/* 37. The person's secrets and Corral's own folders ---------------------------------------- */

static void
test_hidden_paths (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autofree char *names = NULL, *audit = NULL;
        FsEntry share;
        uint64_t h;

        fs_client_host_write (c, ".ssh/id_ed25519", "PRIVATE KEY\n");
        fs_client_host_write (c, ".config/corral/mcp.json", "{}\n");
        fs_client_host_write (c, ".local/share/keyrings/login.keyring", "secret\n");
        fs_client_host_write (c, ".local/state/corral/vms/v/egress-policy.json", "{}\n");
        fs_client_host_write (c, "proj/.npmrc", "//registry.npmjs.org/:_authToken=x\n");
        fs_client_host_write (c, ".config/app.conf", "fine\n");
        share = walk (c, "s");

        /* not there: lookups fail, listings omit them, whatever the case */
        g_assert_cmpint (fs_client_lookup (c, share.node, ".ssh", NULL), ==, -ENOENT);
        g_assert_cmpstr (c->last_rule, ==, "hidden-path");
        g_assert_cmpint (fs_client_lookup (c, share.node, ".SSH", NULL), ==, -ENOENT);
        g_assert_cmpint (fs_client_lookup (c, walk (c, "s/.config").node, "corral", NULL), ==,
                         -ENOENT);
        g_assert_cmpint (fs_client_lookup (c, walk (c, "s/.local/share").node, "keyrings", NULL),
                         ==, -ENOENT);
        g_assert_cmpint (fs_client_lookup (c, walk (c, "s/proj").node, ".npmrc", NULL), ==,
                         -ENOENT);
        names = list_names (c, share.node);
        g_assert_null (strstr (names, ".ssh"));
        g_clear_pointer (&names, g_free);
        names = list_names (c, walk (c, "s/.config").node);
        g_assert_cmpstr (names, ==, "app.conf ");
        g_clear_pointer (&names, g_free);
        names = list_names (c, walk (c, "s/.local/state").node);
        g_assert_cmpstr (names, ==, "");
        /* nor can they be made, or moved out from under their rule */
        assert_refused (c, create (c, share.node, ".ssh", "x"), EPERM, "hidden-path");
        assert_refused (c, fs_client_mkdir (c, share.node, ".gnupg", 0700, NULL), EPERM,
                        "hidden-path");
        assert_refused (c, fs_client_rename (c, share.node, ".config", share.node, "cfg", 0), EPERM,
                        "protected-path");
        assert_refused (c, fs_client_rename (c, share.node, ".local", share.node, "l", 0), EPERM,
                        "protected-path");
        OK (create (c, share.node, "note", "x"));
        assert_refused (c, fs_client_rename (c, share.node, "note", share.node, ".netrc", 0), EPERM,
                        "hidden-path");
        assert_refused (
                c,
                fs_client_create (c, share.node, ".git-credentials", 0600, FS_O_WRONLY, NULL, &h),
                EPERM, "hidden-path");
        audit = fs_client_audit_text (c);
        g_assert_nonnull (strstr (audit, "\"rule\":\"hidden-path\""));
        g_assert_null (strstr (audit, "PRIVATE KEY"));
}

/* Every default hidden pattern is invisible, at the root and deeper. */
static void
test_hidden_defaults (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);

        for (const FsPathDefault *d = fs_path_defaults (); d->pattern; d++) {
                size_t len = strlen (d->pattern);
                bool dir = d->pattern[len - 1] == '/';
                g_autofree char *trim = NULL, *hidden = NULL, *file = NULL, *parent = NULL;
                g_autofree char *base = NULL, *names = NULL, *guest_parent = NULL;

                if (d->cls != FS_PATH_HIDDEN)
                        continue;
                trim = g_strndup (d->pattern, dir ? len - 1 : len);
                hidden = g_strconcat ("deep/", trim, NULL);
                file = dir ? g_strconcat (hidden, "/secret", NULL) : g_strdup (hidden);
                fs_client_host_write (c, file, "secret\n");
                parent = g_path_get_dirname (hidden);
                base = g_path_get_basename (hidden);
                guest_parent = g_strconcat ("s/", parent, NULL);
                g_test_message ("%s", d->pattern);
                g_assert_cmpint (fs_client_lookup (c, walk (c, guest_parent).node, base, NULL), ==,
                                 -ENOENT);
                names = list_names (c, walk (c, guest_parent).node);
                g_assert_null (strstr (names, base));
        }
}

/* Corral's own folders by identity, wherever they are; a share inside one is refused. */
static void
test_own_dirs (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        g_autoptr (GError) error = NULL;
        g_autofree char *own = fs_client_host (c, "renamed-state");
        g_autofree char *inner = g_build_filename (own, "vms", NULL);
        const char *dirs[] = { own, NULL };
        g_autofree char *names = NULL;

        fs_client_host_write (c, "renamed-state/vms/v/egress-policy.json", "{}\n");
        fs_server_set_own_dirs (c->server, dirs);
        g_assert_cmpint (fs_client_lookup (c, walk (c, "s").node, "renamed-state", NULL), ==,
                         -ENOENT);
        names = list_names (c, walk (c, "s").node);
        g_assert_null (strstr (names, "renamed-state"));
        g_assert_false (fs_server_add_share (c->server, "state", own, FS_MODE_RW, NULL, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED);
        g_clear_error (&error);
        g_assert_false (fs_server_add_share (c->server, "inner", inner, FS_MODE_RO, NULL, &error));
        g_assert_nonnull (strstr (error->message, "Corral's own files"));
        g_clear_error (&error);
        /* a share that merely holds it is fine: the folder is hidden there */
        g_assert_true (fs_server_add_share (c->server, "home", c->dir, FS_MODE_RO, NULL, &error));
        g_assert_no_error (error);
}

/* 36. Links judged one at a time but followed as a chain on the host ------------------------ */

static void
test_link_chains (void)
{
        g_autoptr (FsClient) c = fs_client_new (FS_MODE_RW);
        FsEntry share, a, b, deep;

        share = walk (c, "s");
        OK (fs_client_mkdir (c, share.node, "a", 0755, &a));
        OK (fs_client_mkdir (c, a.node, "b", 0755, &b));
        /* a/l1 -> ".." is the root; "l1/.." through it would be above the root on the host */
        OK (fs_client_symlink (c, a.node, "l1", "..", NULL));
        assert_refused (c, fs_client_symlink (c, a.node, "up", "l1/..", NULL), EPERM,
                        "outside-share");
        assert_refused (c, fs_client_symlink (c, a.node, "up", "l1/../outside/canary", NULL), EPERM,
                        "outside-share");
        assert_refused (c, fs_client_symlink (c, share.node, "x", "a/l1/..", NULL), EPERM,
                        "outside-share");
        /* climbing is fine as far as the root */
        OK (fs_client_symlink (c, b.node, "top", "../../file", NULL));
        assert_refused (c, fs_client_symlink (c, b.node, "over", "../../../file", NULL), EPERM,
                        "outside-share");
        /* a link moved higher would climb further than the root: refused */
        assert_refused (c, fs_client_rename (c, b.node, "top", share.node, "top", 0), EPERM,
                        "outside-share");
        assert_refused (c, fs_client_rename (c, b.node, "top", a.node, "top-level", 0), EPERM,
                        "outside-share");
        /* a folder with such a link moved higher: EXDEV (mv copies, and the copy is checked) */
        OK (fs_client_mkdir (c, b.node, "deep", 0755, &deep));
        OK (fs_client_symlink (c, deep.node, "root", "../../..", NULL));
        assert_refused (c, fs_client_rename (c, b.node, "deep", share.node, "deep", 0), EXDEV,
                        "outside-share");
        /* deeper is always fine */
        OK (fs_client_mkdir (c, b.node, "sub", 0755, NULL));
        OK (fs_client_rename (c, b.node, "deep", walk (c, "s/a/b/sub").node, "deep", 0));
        OK (fs_client_rename (c, b.node, "top", walk (c, "s/a/b/sub").node, "top", 0));
        mount_test_assert_outside_untouched (c->outside, 1);
}

int
main (int argc, char **argv)
{
        const FsClientTest tests[] = {
                { "git-existing", test_git_existing },
                { "git-created", test_git_created },
                { "git-bare", test_git_bare },
                { "hidden-paths", test_hidden_paths },
                { "hidden-defaults", test_hidden_defaults },
                { "own-dirs", test_own_dirs },
                { "link-chains", test_link_chains },
        };

        g_test_init (&argc, &argv, NULL);
        fs_client_add_variants ("mount-rules", tests, G_N_ELEMENTS (tests));
        return g_test_run ();
}
