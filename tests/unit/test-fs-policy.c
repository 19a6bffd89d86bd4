/* test-fs-policy.c — the file-service codec and the shared-folder rules, without a file system.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <errno.h>
#include <gio/gio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs-git.h"
#include "corral-policy.h"
#include "fs-paths.h"
#include "fs-policy.h"
#include "fs-server.h"
#include "fs.h"

static void
test_codec_round_trip (void)
{
        const FsRequest reqs[] = {
                { .op = FS_OP_LOOKUP, .node = 7, .name = { "a.txt", 5 } },
                { .op = FS_OP_FORGET, .node = 7, .nlookup = 3 },
                { .op = FS_OP_GETATTR, .node = 9 },
                { .op = FS_OP_SETATTR,
                  .node = 9,
                  .handle = 2,
                  .set = { .valid = FS_SET_SIZE | FS_SET_MTIME,
                           .size = 10,
                           .mtime_s = -5,
                           .mtime_ns = 999999999 } },
                { .op = FS_OP_MKDIR, .node = 1, .name = { "d", 1 }, .mode = 0755 },
                { .op = FS_OP_SYMLINK, .node = 3, .name = { "l", 1 }, .name2 = { "../x", 4 } },
                { .op = FS_OP_RENAME,
                  .node = 3,
                  .name = { "a", 1 },
                  .node2 = 4,
                  .name2 = { "b", 1 },
                  .flags = FS_RENAME_NOREPLACE },
                { .op = FS_OP_OPEN, .node = 3, .flags = FS_O_RDWR | FS_O_TRUNC },
                { .op = FS_OP_READ, .handle = 1, .offset = 1 << 20, .size = FS_MAX_IO },
                { .op = FS_OP_WRITE,
                  .handle = 1,
                  .offset = 5,
                  .data = (const uint8_t *) "abc",
                  .data_len = 3 },
                { .op = FS_OP_CREATE,
                  .node = 3,
                  .name = { "n", 1 },
                  .mode = 0644,
                  .flags = FS_O_WRONLY | FS_O_EXCL },
                { .op = FS_OP_READDIRPLUS, .handle = 4, .offset = 77, .size = 4096 },
                { .op = FS_OP_FSYNC, .handle = 4, .flags = 1 },
        };

        for (guint i = 0; i < G_N_ELEMENTS (reqs); i++) {
                uint8_t buf[256];
                FsWriter w;
                FsRequest q;

                fs_writer_init (&w, buf, sizeof buf);
                g_assert_cmpint (fs_request_encode (&reqs[i], &w), ==, 0);
                g_assert_cmpint (fs_request_decode (buf, w.len, &q), ==, 0);
                g_assert_cmpuint (q.op, ==, reqs[i].op);
                g_assert_cmpuint (q.node, ==, reqs[i].node);
                g_assert_cmpuint (q.node2, ==, reqs[i].node2);
                g_assert_cmpuint (q.handle, ==, reqs[i].handle);
                g_assert_cmpuint (q.offset, ==, reqs[i].offset);
                g_assert_cmpuint (q.flags, ==, reqs[i].flags);
                g_assert_cmpmem (q.name.ptr, q.name.len, reqs[i].name.ptr, reqs[i].name.len);
                g_assert_cmpmem (q.name2.ptr, q.name2.len, reqs[i].name2.ptr, reqs[i].name2.len);
                g_assert_cmpmem (q.data, q.data_len, reqs[i].data, reqs[i].data_len);
                g_assert_cmpint (q.set.mtime_s, ==, reqs[i].set.mtime_s);
                /* Every strict prefix is malformed; so is one extra byte. */
                for (size_t len = 0; len < w.len; len++) {
                        if (reqs[i].op == FS_OP_WRITE && len >= 20)
                                continue; /* shorter data is still a valid WRITE */
                        g_assert_cmpint (fs_request_decode (buf, len, &q), ==, -EINVAL);
                }
                buf[w.len] = 0;
                if (reqs[i].op != FS_OP_WRITE)
                        g_assert_cmpint (fs_request_decode (buf, w.len + 1, &q), ==, -EINVAL);
        }
}

static void
test_codec_refusals (void)
{
        uint8_t buf[256];
        FsWriter w;
        FsRequest q;

        /* unknown op, reserved bits */
        fs_writer_init (&w, buf, sizeof buf);
        fs_write_u16 (&w, 999);
        fs_write_u16 (&w, 0);
        g_assert_cmpint (fs_request_decode (buf, w.len, &q), ==, -ENOSYS);
        fs_writer_init (&w, buf, sizeof buf);
        fs_write_u16 (&w, FS_OP_GETATTR);
        fs_write_u16 (&w, 1);
        fs_write_u64 (&w, 2);
        g_assert_cmpint (fs_request_decode (buf, w.len, &q), ==, -EINVAL);
        /* unknown open flags, access mode 3, both rename flags, oversized read */
        {
                const FsRequest bad[] = {
                        { .op = FS_OP_OPEN, .node = 2, .flags = 0x100 },
                        { .op = FS_OP_OPEN, .node = 2, .flags = 3 },
                        { .op = FS_OP_RENAME,
                          .node = 2,
                          .name = { "a", 1 },
                          .node2 = 2,
                          .name2 = { "b", 1 },
                          .flags = 3 },
                        { .op = FS_OP_READ, .handle = 1, .size = FS_MAX_IO + 1 },
                        { .op = FS_OP_SETATTR, .node = 2, .set = { .valid = 0 } },
                        { .op = FS_OP_SETATTR, .node = 2, .set = { .valid = 0x100 } },
                        { .op = FS_OP_SETATTR,
                          .node = 2,
                          .set = { .valid = FS_SET_ATIME, .atime_ns = 1000000000 } },
                        { .op = FS_OP_FSYNC, .handle = 1, .flags = 2 },
                        /* shared memory: the header page, past the largest region, too big */
                        { .op = FS_OP_READ_SHM, .handle = 1, .size = 10, .shm_offset = 0 },
                        { .op = FS_OP_WRITE_SHM, .handle = 1, .size = 10, .shm_offset = 100 },
                        { .op = FS_OP_WRITE_SHM,
                          .handle = 1,
                          .size = 4096,
                          .shm_offset = FS_SHM_MAX - 100 },
                        { .op = FS_OP_READ_SHM,
                          .handle = 1,
                          .size = FS_MAX_IO + 1,
                          .shm_offset = FS_SHM_HEADER },
                };
                for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
                        fs_writer_init (&w, buf, sizeof buf);
                        g_assert_cmpint (fs_request_encode (&bad[i], &w), ==, 0);
                        g_assert_cmpint (fs_request_decode (buf, w.len, &q), ==, -EINVAL);
                }
        }
        /* the writer never runs past its buffer */
        fs_writer_init (&w, buf, 3);
        fs_write_u32 (&w, 1);
        g_assert_true (w.overflow);
        g_assert_cmpuint (w.len, ==, 0);
}

static void
test_names (void)
{
        g_assert_true (fs_name_valid ("a", 1));
        g_assert_true (fs_name_valid ("...", 3));
        g_assert_true (fs_name_valid (".hidden", 7));
        g_assert_false (fs_name_valid (".", 1));
        g_assert_false (fs_name_valid ("..", 2));
        g_assert_false (fs_name_valid ("", 0));
        g_assert_false (fs_name_valid ("a/b", 3));
        g_assert_false (fs_name_valid ("a\0", 2));

        g_assert_true (fs_share_name_valid ("Projects"));
        g_assert_true (fs_share_name_valid ("my files 2"));
        g_assert_false (fs_share_name_valid (".git"));
        g_assert_false (fs_share_name_valid ("a/b"));
        g_assert_false (fs_share_name_valid ("a\nb"));
        g_assert_false (fs_share_name_valid (""));
        g_assert_false (fs_share_name_valid ("\xff"));
        {
                g_autofree char *a = fs_share_name_for_path ("/home/ana/Tax 2025");
                g_autofree char *b = fs_share_name_for_path ("/home/ana/.secret");
                g_autofree char *c = fs_share_name_for_path ("/");
                g_autofree char *d = fs_share_name_for_path ("/x/a\nb");
                g_assert_cmpstr (a, ==, "Tax 2025");
                g_assert_true (fs_share_name_valid (b));
                g_assert_true (fs_share_name_valid (c));
                g_assert_true (fs_share_name_valid (d));
        }
}

/* Every default pattern classifies as its table says, at the root and at any depth, in any
 * case, with what lies beneath its folders. */
static void
test_path_defaults (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (FsPathRules) rules = fs_path_rules_new (NULL, NULL, &error);
        const FsPathDefault *d = fs_path_defaults ();
        guint n = 0;

        g_assert_no_error (error);
        for (; d->pattern; d++, n++) {
                size_t len = strlen (d->pattern);
                g_autofree char *trim =
                        g_strndup (d->pattern, d->pattern[len - 1] == '/' ? len - 1 : len);
                g_autofree char *path = NULL, *deep = NULL, *upper = NULL, *below = NULL;
                GString *p = g_string_new (NULL);

                /* "*.code-workspace" names "my.code-workspace" */
                for (const char *c = trim; *c; c++)
                        g_string_append (p, *c == '*' ? "my" : (char[]){ *c, 0 });
                path = g_string_free (p, FALSE);
                deep = g_strconcat ("some/project/", path, NULL);
                upper = g_ascii_strup (deep, -1);
                below = g_strconcat (path, "/x", NULL);
                g_test_message ("%s", d->pattern);
                g_assert_cmpint (fs_path_rules_classify (rules, path), ==, d->cls);
                g_assert_cmpint (fs_path_rules_classify (rules, deep), ==, d->cls);
                g_assert_cmpint (fs_path_rules_classify (rules, upper), ==, d->cls);
                g_assert_cmpint (fs_path_rules_classify (rules, below), ==, d->cls);
                g_assert_nonnull (d->why);
        }
        g_assert_cmpuint (n, >, 100);
}

static void
test_path_rules (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (FsPathRules) p = NULL;
        const char *extra[] = { "Makefile", "scripts/hooks/", ".ssh/config", NULL };
        const char *hidden[] = { "secrets.env", NULL };
        const char *bad[] = { "/etc/passwd", "a//b", "../x", "./a", "", "*", "a/*/b/..", NULL };

        p = fs_path_rules_new (extra, hidden, &error);
        g_assert_no_error (error);
#define IS(path, cls) g_assert_cmpint (fs_path_rules_classify (p, path), ==, cls)
        IS ("Makefile", FS_PATH_PROTECTED);
        IS ("scripts/hooks/a", FS_PATH_PROTECTED);
        IS ("a/secrets.env", FS_PATH_HIDDEN);
        IS (".ssh/config", FS_PATH_HIDDEN); /* hidden wins */
        IS (".github/workflows/ci.yml", FS_PATH_PROTECTED);
        IS ("x/team.Code-Workspace", FS_PATH_PROTECTED);
        IS ("", FS_PATH_PLAIN);
        IS (".github", FS_PATH_PLAIN);
        IS (".github/ISSUE_TEMPLATE.md", FS_PATH_PLAIN);
        IS (".bashrc.bak", FS_PATH_PLAIN);
        IS ("bashrc", FS_PATH_PLAIN);
        IS ("src/hooks/useThing.js", FS_PATH_PLAIN);
        IS (".code-workspace", FS_PATH_PLAIN); /* a suffix needs something before it */
        IS ("notes.code-workspace.txt", FS_PATH_PLAIN);
        IS (".git/config", FS_PATH_PLAIN); /* git's metadata has rules of its own */
        IS (".config", FS_PATH_PLAIN);
        IS (".docker/daemon.json", FS_PATH_PLAIN);
#undef IS
        g_assert_true (fs_path_rules_is_ancestor (p, ".github"));
        g_assert_true (fs_path_rules_is_ancestor (p, "a/.GITHUB"));
        g_assert_true (fs_path_rules_is_ancestor (p, ".config"));
        g_assert_true (fs_path_rules_is_ancestor (p, ".local/share"));
        g_assert_true (fs_path_rules_is_ancestor (p, "scripts"));
        g_assert_false (fs_path_rules_is_ancestor (p, ".github/workflows"));
        g_assert_false (fs_path_rules_is_ancestor (p, "src"));
        g_assert_false (fs_path_rules_is_ancestor (p, ".git"));

        for (guint i = 0; bad[i]; i++) {
                const char *one[] = { bad[i], NULL };
                g_autoptr (GError) e = NULL;
                g_autoptr (FsPathRules) q = fs_path_rules_new (one, NULL, &e);
                g_assert_null (q);
                g_assert_error (e, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
                g_assert_null (fs_path_rules_new (NULL, one, NULL));
                g_assert_false (fs_path_pattern_check (bad[i], NULL));
        }
}

/* SECURITY.md lists the same table the code enforces (F8, F20). */
static void
test_path_table_documented (void)
{
        g_autofree char *file =
                g_build_filename (g_getenv ("CORRAL_SOURCE_DIR"), "SECURITY.md", NULL);
        g_autofree char *text = NULL;

        g_assert_true (g_file_get_contents (file, &text, NULL, NULL));
        for (const FsPathDefault *d = fs_path_defaults (); d->pattern; d++) {
                g_autofree char *quoted = g_strdup_printf ("`%s`", d->pattern);
                if (!strstr (text, quoted))
                        g_error ("SECURITY.md does not list %s", quoted);
        }
}

static void
test_git_entries (void)
{
        const char *ok[] = { "HEAD",
                             "index",
                             "index.lock",
                             "objects",
                             "objects/ab/cdef",
                             "objects/pack/pack-1.pack",
                             "objects/info/alternates",
                             "refs",
                             "refs/heads/main",
                             "logs/HEAD",
                             "packed-refs",
                             "packed-refs.lock",
                             "COMMIT_EDITMSG",
                             "ORIG_HEAD.lock",
                             "info",
                             "info/exclude",
                             "info/sparse-checkout",
                             "rebase-merge/done",
                             "index.stash.123",
                             "next-index-99.lock",
                             "FETCH_HEAD",
                             "description",
                             "shallow.lock",
                             "sequencer/todo",
                             "MERGE_MSG",
                             "gc.pid",
                             "lfs/objects/x",
                             "tAb3xYz",
                             "packed-refs.new",
                             "info/refs_Xv2iJP",
                             NULL };
        const char *refused[] = { "hooks",
                                  "hooks/pre-commit",
                                  "HOOKS/x",
                                  "modules",
                                  "modules/x/config",
                                  "worktrees/w/gitdir",
                                  "commondir",
                                  "gitdir",
                                  "config.worktree",
                                  "info/attributes",
                                  "info/x/y",
                                  "fsmonitor--daemon",
                                  "foo",
                                  "",
                                  "hooks.lock",
                                  "tAb3xY",
                                  "tAb3-Yz",
                                  NULL };

        for (guint i = 0; ok[i]; i++) {
                g_test_message ("%s", ok[i]);
                g_assert_cmpint (fs_git_entry (ok[i]), ==, FS_GIT_OK);
        }
        for (guint i = 0; refused[i]; i++) {
                g_test_message ("%s", refused[i]);
                g_assert_cmpint (fs_git_entry (refused[i]), ==, FS_GIT_REFUSED);
        }
        g_assert_cmpint (fs_git_entry ("config"), ==, FS_GIT_CONFIG);
        g_assert_cmpint (fs_git_entry ("Config"), ==, FS_GIT_CONFIG);
        g_assert_cmpint (fs_git_entry ("config.lock"), ==, FS_GIT_CONFIG_LOCK);
        g_assert_true (fs_git_is_dot_git (".GIT", 4));
        g_assert_false (fs_git_is_dot_git (".gitx", 5));
        g_assert_true (fs_git_is_head ("head", 4));
        g_assert_true (fs_git_is_control_name ("hooks", 5));
        g_assert_false (fs_git_is_control_name ("objects", 7));
}

/* What git itself writes passes; every way to make git run something is refused. */
static void
test_git_config (void)
{
        const char *good[] = {
                "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
                "\tlogallrefupdates = true\n",
                "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = sha256\n",
                "[remote \"origin\"]\n\turl = https://example.com/r.git\n"
                "\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
                "[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n",
                "[user]\n\tname = \"A \\\"B\\\"\"  # comment\n\temail = a@b ; more\n",
                "; comment\n# comment\n\n[Core]\n\tFileMode = true\n\tbare\n",
                "[remote \"o\"]\n\turl = git@github.com:a/b.git\n",
                "[remote \"o\"]\n\turl = /srv/repo\n\tpushurl = ../r\n",
                "[remote \"o\"]\n\turl = ssh://git@host/r\n[remote \"p\"]\n\turl = file:///tmp/r\n",
                "[remote \"\"]\n\turl = x\n",
                "[advice]\n\tdetachedHead = false\n[init]\n\tdefaultBranch = main\n",
                "",
                "[core]",
        };
        const struct {
                const char *text;
                const char *problem;
        } bad[] = {
                { "[core]\n\tfsmonitor = x\n", "core.fsmonitor" },
                { "[core]\n\thooksPath = /tmp\n", "core.hookspath" },
                { "[CORE]\n\tFSMONITOR = x\n", "core.fsmonitor" },
                { "[core]\n\tfsmonitor\n", "core.fsmonitor" },
                { "[core]\n\tsshCommand = evil\n", "core.sshcommand" },
                { "[core]\n\tpager = evil\n", "core.pager" },
                { "[core]\n\teditor = evil\n", "core.editor" },
                { "[core]\n\tworktree = /home\n", "core.worktree" },
                { "[core]\n\taskPass = evil\n", "core.askpass" },
                { "[include]\n\tpath = /tmp/x\n", "include.path" },
                { "[includeIf \"gitdir:/\"]\n\tpath = x\n", "includeif.*.path" },
                { "[alias]\n\tst = !evil\n", "alias.st" },
                { "[filter \"lfs\"]\n\tclean = evil\n", "filter.*.clean" },
                { "[diff \"x\"]\n\ttextconv = evil\n", "diff.*.textconv" },
                { "[diff]\n\texternal = evil\n", "diff.external" },
                { "[credential]\n\thelper = evil\n", "credential.helper" },
                { "[url \"evil\"]\n\tinsteadOf = https://\n", "url.*.insteadof" },
                { "[submodule \"x\"]\n\tupdate = !evil\n", "submodule.*.update" },
                { "[remote \"o\"]\n\tuploadpack = evil\n", "remote.*.uploadpack" },
                { "[remote \"o\"]\n\tvcs = evil\n", "remote.*.vcs" },
                { "[remote \"o\"]\n\turl = ext::sh -c evil\n", "plain URL" },
                { "[remote \"o\"]\n\turl = evil://x\n", "plain URL" },
                { "[remote \"o\"]\n\turl = -oProxyCommand=x:y\n", "plain URL" },
                { "[remote \"o\"]\n\turl = ssh://-oProxyCommand=x/y\n", "plain URL" },
                { "[remote \"o\"]\n\turl = \"ext::sh\"\n", "plain URL" },
                { "[remote \"o\"]\n\turl\n", "plain URL" },
                { "[core.x]\n\ta = b\n", "legacy" },
                { "[core] fsmonitor = x\n", "after a section header" },
                { "[core]\n\tbare = false \\\n fsmonitor\n", "continuation" },
                { "fsmonitor = x\n", "outside any section" },
                { "[ core ]\n", "without a name" },
                { "[remote\"o\"]\n", "malformed section" },
                { "[remote \"o\\\"x\"]\n", "escape" },
                { "[remote \"o\n", "line break" },
                { "[core]\n\tbare = \"x\n", "unterminated" },
                { "[core]\n\tbare = \\q\n", "unknown escape" },
                { "[core]\n\t1bare = x\n", "malformed line" },
                { "[core]\r\n\tbare = false\r\n", "carriage return" },
                { "[core]\n\tbare = \xff\n", "UTF-8" },
        };

        for (guint i = 0; i < G_N_ELEMENTS (good); i++) {
                g_autofree char *problem = NULL;
                g_test_message ("good %u", i);
                if (!fs_git_config_check (good[i], strlen (good[i]), &problem))
                        g_error ("refused: %s\n%s", problem, good[i]);
        }
        for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
                g_autofree char *problem = NULL;
                g_test_message ("bad %u: %s", i, bad[i].text);
                g_assert_false (fs_git_config_check (bad[i].text, strlen (bad[i].text), &problem));
                g_assert_nonnull (problem);
                if (!strstr (problem, bad[i].problem))
                        g_error ("“%s” does not say “%s”", problem, bad[i].problem);
        }
        g_assert_false (fs_git_config_check ("[core]\0", 7, NULL));
        {
                g_autofree char *big = g_strnfill (FS_GIT_CONFIG_MAX + 1, '\n');
                g_assert_false (fs_git_config_check (big, FS_GIT_CONFIG_MAX + 1, NULL));
        }
}

static void
test_symlink_targets (void)
{
        const struct {
                const char *link;
                const char *target;
                gboolean inside;
                int climb; /* -1: not the strict form */
                gboolean allowed;
        } cases[] = {
                { "l", "file", TRUE, 0, TRUE },
                { "l", "./file", TRUE, 0, TRUE },
                { "l", "d/../file", TRUE, -1, FALSE },
                { "d/l", "../file", TRUE, 1, TRUE },
                { "d/e/l", "../../x", TRUE, 2, TRUE },
                { "d/e/l", "../../x/y/./z", TRUE, 2, TRUE },
                { "d/l", "..", TRUE, 1, TRUE },
                { "l", "..", FALSE, 1, FALSE },
                { "l", "../x", FALSE, 1, FALSE },
                { "l", "d/../../x", FALSE, -1, FALSE },
                { "d/l", "../../x", FALSE, 2, FALSE },
                { "d/l", "l1/..", TRUE, -1, FALSE }, /* l1 may itself be a link up */
                { "d/l", "./../x", TRUE, 1, TRUE },
                { "l", "/etc/passwd", FALSE, -1, FALSE },
                { "l", "/proc/self/root", FALSE, -1, FALSE },
                { "l", "a//b/../..", TRUE, -1, FALSE },
                { "l", "a/../..", FALSE, -1, FALSE },
        };

        for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
                size_t len = strlen (cases[i].target);
                g_test_message ("%s -> %s", cases[i].link, cases[i].target);
                g_assert_cmpint (fs_symlink_target_inside (cases[i].link, cases[i].target, len), ==,
                                 cases[i].inside);
                g_assert_cmpint (fs_symlink_climb (cases[i].target, len), ==, cases[i].climb);
                g_assert_cmpint (fs_symlink_target_allowed (cases[i].link, cases[i].target, len),
                                 ==, cases[i].allowed);
        }
        g_assert_false (fs_symlink_target_inside ("l", "a\0b", 3));
        g_assert_false (fs_symlink_target_inside ("l", "", 0));
        g_assert_cmpint (fs_symlink_climb ("a\0b", 3), ==, -1);
        g_assert_cmpint (fs_path_depth ("a/b//c"), ==, 3);
        g_assert_cmpint (fs_path_depth (""), ==, 0);
}

static void
test_modes (void)
{
        FsMode m;

        g_assert_true (fs_mode_parse ("ro", &m) && m == FS_MODE_RO);
        g_assert_true (fs_mode_parse ("rw", &m) && m == FS_MODE_RW);
        g_assert_true (fs_mode_parse ("rw-nodelete", &m) && m == FS_MODE_RW_NODELETE);
        g_assert_false (fs_mode_parse ("RW", &m));
        g_assert_false (fs_mode_parse (NULL, &m));
        for (int i = FS_MODE_RO; i <= FS_MODE_RW_NODELETE; i++) {
                g_assert_true (fs_mode_parse (fs_mode_to_string (i), &m));
                g_assert_cmpint (m, ==, i);
        }
        {
                g_autofree char *msg =
                        fs_rule_explain (FS_RULE_NO_DELETE, "Tax", FS_MODE_RW_NODELETE, "old.pdf");
                g_assert_nonnull (strstr (msg, "Tax"));
                g_assert_nonnull (strstr (msg, "old.pdf"));
                g_assert_nonnull (strstr (msg, "approve"));
        }
}

/* The protected and hidden paths the file server takes from one policy text (corral-policy.h
 * reads it for every program; these are the file server's cases). NULL lists on failure. */
static gboolean
managed_parse (const char *json,
               gsize len,
               const char *origin,
               GStrv *ret_protect,
               GStrv *ret_hide,
               GError **error)
{
        g_autoptr (CorralPolicy) policy =
                corral_policy_parse_texts (1, &origin, &json, &len, error);
        const char *const *protect = NULL, *const *hide = NULL;
        const char *const none[] = { NULL };

        *ret_protect = NULL;
        if (ret_hide)
                *ret_hide = NULL;
        if (!policy)
                return FALSE;
        corral_policy_get_strv (policy, "sharedFolders.protectedPaths", &protect, NULL);
        corral_policy_get_strv (policy, "sharedFolders.hiddenPaths", &hide, NULL);
        *ret_protect = g_strdupv ((char **) (protect ? protect : none));
        if (ret_hide)
                *ret_hide = g_strdupv ((char **) (hide ? hide : none));
        return TRUE;
}

/* The same from a file, as corral-fsd --policy reads it (missing: no policy). */
static gboolean
managed_load (const char *path, GStrv *ret_protect, GError **error)
{
        g_autoptr (CorralPolicy) policy = corral_policy_load (path, error);
        const char *const *protect = NULL;
        const char *const none[] = { NULL };

        *ret_protect = NULL;
        if (!policy)
                return FALSE;
        corral_policy_get_strv (policy, "sharedFolders.protectedPaths", &protect, NULL);
        *ret_protect = g_strdupv ((char **) (protect ? protect : none));
        return TRUE;
}

/* The managed policy's sharedFolders part: what it adds, and every way it can be wrong. */
static void
test_managed_parse (void)
{
        static const struct {
                const char *json;
                const char *first; /* NULL: refused */
                const char *error_part;
        } cases[] = {
                { "{}", "", NULL },
                { "{\"network\": {\"deniedHosts\": [\"x.example\"]}}", "", NULL },
                /* Every other part of the file is checked too (it used to be skipped here). */
                { "{\"network\": {\"allow\": [\"x\"]}}", NULL, "not a known setting" },
                { "{\"sharedFolders\": {}}", "", NULL },
                { "{\"sharedFolders\": {\"protectedPaths\": []}}", "", NULL },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"deploy/\", \"a/b.env\"]}}",
                  "deploy/", NULL },
                { "{\"sharedFolders\": {\"protectedPaths\": null}}", "", NULL },
                { "", NULL, "JSON" },
                { "[]", NULL, "one JSON object" },
                { "{\"sharedFolders\": {}} x", NULL, "JSON" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"a\\u0000b\"]}}", NULL, "JSON" },
                { "{\"sharedFolders\": 7}", NULL, "must be an object" },
                { "{\"sharedFolders\": []}", NULL, "must be an object" },
                { "{\"sharedFolders\": {\"protectedPath\": []}}", NULL, "not a known setting" },
                { "{\"sharedFolders\": {\"protectedPaths\": \"deploy/\"}}", NULL,
                  "must be a list" },
                { "{\"sharedFolders\": {\"protectedPaths\": [7]}}", NULL, "protectedPaths[0]" },
                { "{\"sharedFolders\": {\"protectedPaths\": [[\"x\"]]}}", NULL,
                  "protectedPaths[0]" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"../etc\"]}}", NULL,
                  "must be a path relative" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"/etc/passwd\"]}}", NULL,
                  "must be a path relative" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"a//b\"]}}", NULL,
                  "must be a path relative" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"\"]}}", NULL,
                  "must be a path relative" },
                { "{\"sharedFolders\": {\"protectedPaths\": [\"./x\"]}}", NULL,
                  "must be a path relative" },
        };

        for (guint i = 0; i < G_N_ELEMENTS (cases); i++) {
                g_autoptr (GError) error = NULL;
                g_auto (GStrv) protect = NULL;
                gboolean ok = managed_parse (cases[i].json, strlen (cases[i].json), "/p.json",
                                             &protect, NULL, &error);

                g_test_message ("%s", cases[i].json);
                if (cases[i].first) {
                        g_assert_no_error (error);
                        g_assert_true (ok);
                        g_assert_cmpstr (protect[0] ? protect[0] : "", ==, cases[i].first);
                        continue;
                }
                g_assert_false (ok);
                g_assert_null (protect);
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
                /* names the file, says what is wrong and who can fix it */
                g_assert_nonnull (strstr (error->message, "/p.json"));
                g_assert_nonnull (strstr (error->message, cases[i].error_part));
                g_assert_nonnull (strstr (error->message, "IT department"));
        }
}

static void
test_managed_limits (void)
{
        g_autoptr (GString) json = g_string_new ("{\"sharedFolders\": {\"protectedPaths\": [");
        g_autoptr (GString) deep = g_string_new ("{\"sharedFolders\": ");
        g_autoptr (GError) error = NULL;
        g_auto (GStrv) protect = NULL;
        g_autofree char *long_name = g_strnfill (4097, 'a');
        g_autofree char *long_json = NULL;

        for (guint i = 0; i < CORRAL_POLICY_MAX_ITEMS; i++)
                g_string_append_printf (json, "%s\"p%u\"", i ? "," : "", i);
        g_string_append (json, "]}}");
        g_assert_true (managed_parse (json->str, json->len, "p", &protect, NULL, &error));
        g_assert_cmpuint (g_strv_length (protect), ==, CORRAL_POLICY_MAX_ITEMS);
        g_clear_pointer (&protect, g_strfreev);
        /* one more is too many */
        g_string_truncate (json, json->len - 3);
        g_string_append (json, ",\"one-more\"]}}");
        g_assert_false (managed_parse (json->str, json->len, "p", &protect, NULL, &error));
        g_clear_error (&error);
        long_json =
                g_strdup_printf ("{\"sharedFolders\": {\"protectedPaths\": [\"%s\"]}}", long_name);
        g_assert_false (managed_parse (long_json, strlen (long_json), "p", &protect, NULL, &error));
        g_clear_error (&error);
        for (guint i = 0; i < 200; i++)
                g_string_append (deep, "{\"a\": ");
        g_assert_false (managed_parse (deep->str, deep->len, "p", &protect, NULL, &error));
        g_clear_error (&error);
        g_assert_null (protect);
}

/* Reading the file: missing is no policy; a FIFO, a folder or an oversized file is an error,
 * and a FIFO never blocks the reader. */
static void
test_managed_load (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *dir = g_dir_make_tmp ("corral-managed-XXXXXX", &error);
        g_autofree char *file = g_build_filename (dir, "managed.json", NULL);
        g_autofree char *fifo = g_build_filename (dir, "fifo.json", NULL);
        g_autofree char *big = g_build_filename (dir, "big.json", NULL);
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", dir);
        g_auto (GStrv) protect = NULL;

        g_assert_no_error (error);
        g_assert_true (managed_load (file, &protect, &error));
        g_assert_no_error (error);
        g_assert_null (protect[0]);
        g_clear_pointer (&protect, g_strfreev);

        g_assert_true (g_file_set_contents (
                file, "{\"sharedFolders\": {\"protectedPaths\": [\"deploy/\"]}}\n", -1, NULL));
        g_assert_true (managed_load (file, &protect, &error));
        g_assert_cmpstr (protect[0], ==, "deploy/");
        g_assert_null (protect[1]);
        g_clear_pointer (&protect, g_strfreev);

        g_assert_cmpint (mkfifo (fifo, 0600), ==, 0);
        alarm (10);
        g_assert_false (managed_load (fifo, &protect, &error));
        alarm (0);
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
        g_assert_nonnull (strstr (error->message, "not a regular file"));
        g_clear_error (&error);
        g_assert_false (managed_load (dir, &protect, &error));
        g_clear_error (&error);
        g_assert_true (g_file_set_contents (big, "", 0, NULL));
        g_assert_cmpint (truncate (big, CORRAL_POLICY_MAX_SIZE + 1), ==, 0);
        g_assert_false (managed_load (big, &protect, &error));
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_INVALID);
        g_assert_nonnull (strstr (error->message, "larger than 1 MiB"));
        g_clear_error (&error);
        /* A policy that exists but cannot be opened (here: a path through a file, which fails
         * for root too) is an error, never "no policy". */
        {
                g_autofree char *through = g_build_filename (file, "managed.json", NULL);
                g_assert_false (managed_load (through, &protect, &error));
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_UNREADABLE);
                g_assert_nonnull (strstr (error->message, through));
                g_clear_error (&error);
        }
        g_assert_null (protect);
        g_assert_cmpint (system (cmd), ==, 0);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add_func ("/fs/codec/round-trip", test_codec_round_trip);
        g_test_add_func ("/fs/codec/refusals", test_codec_refusals);
        g_test_add_func ("/fs/names", test_names);
        g_test_add_func ("/fs/policy/path-defaults", test_path_defaults);
        g_test_add_func ("/fs/policy/path-rules", test_path_rules);
        g_test_add_func ("/fs/policy/path-table-documented", test_path_table_documented);
        g_test_add_func ("/fs/policy/git-entries", test_git_entries);
        g_test_add_func ("/fs/policy/git-config", test_git_config);
        g_test_add_func ("/fs/policy/symlink-targets", test_symlink_targets);
        g_test_add_func ("/fs/policy/modes", test_modes);
        g_test_add_func ("/fs/managed/parse", test_managed_parse);
        g_test_add_func ("/fs/managed/limits", test_managed_limits);
        g_test_add_func ("/fs/managed/load", test_managed_load);
        return g_test_run ();
}
