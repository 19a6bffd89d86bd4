/* test-mount-basic.c — everyday file operations through a real corral-fs mount.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "mount-harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

typedef struct {
        char *host; /* the shared host folder */
        MountHarness *h;
        char *share; /* the share as the mount shows it */
} Fixture;

static void
fixture_setup (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *spec = NULL;

        f->host = g_dir_make_tmp ("corral-share-XXXXXX", &error);
        g_assert_no_error (error);
        spec = g_strdup_printf ("work:rw:%s", f->host);
        f->h = mount_harness_new ((const char *const[]){ spec, NULL }, &error);
        if (mount_harness_skip_or_fail (error))
                return;
        f->share = mount_harness_path (f->h, "work", NULL);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
        const char *rm[] = { "rm", "-rf", f->host, NULL };

        mount_harness_free (f->h);
        g_assert_true (mount_harness_run (NULL, rm, NULL, NULL));
        g_free (f->host);
        g_free (f->share);
}

#define SKIP_IF_NO_MOUNT(f)                                                                        \
        do {                                                                                       \
                if (!(f)->h)                                                                       \
                        return; /* skipped in setup */                                             \
        } while (0)

static char *
in_share (Fixture *f, const char *rel)
{
        return g_build_filename (f->share, rel, NULL);
}

static char *
on_host (Fixture *f, const char *rel)
{
        return g_build_filename (f->host, rel, NULL);
}

static void
assert_contents (const char *path, const char *expected)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *data = NULL;
        gsize len;

        g_file_get_contents (path, &data, &len, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (len, ==, strlen (expected));
        g_assert_cmpstr (data, ==, expected);
}

static void
test_root (Fixture *f, gconstpointer data)
{
        g_autoptr (GDir) dir = NULL;
        g_autoptr (GError) error = NULL;
        struct statvfs sv;
        struct stat st;

        SKIP_IF_NO_MOUNT (f);
        dir = g_dir_open (f->h->mountpoint, 0, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (g_dir_read_name (dir), ==, "work");
        g_assert_null (g_dir_read_name (dir));

        g_assert_cmpint (stat (f->share, &st), ==, 0);
        g_assert_true (S_ISDIR (st.st_mode));
        /* Every file shows the owner of the mount point (root here). */
        g_assert_cmpuint (st.st_uid, ==, geteuid ());
        g_assert_cmpint (statvfs (f->share, &sv), ==, 0);
        g_assert_cmpuint (sv.f_namemax, <=, 255);
        g_assert_cmpuint (sv.f_blocks, >, 0);
}

/* The client serves every program's file access: as root it runs above their priority, in
 * every thread, so that it never queues behind them (corral-fs's FS_NICE). */
static void
test_priority (Fixture *f, gconstpointer data)
{
        g_autofree char *task_dir = NULL;
        g_autoptr (GDir) tasks = NULL;
        g_autoptr (GError) error = NULL;
        const char *task;
        guint n = 0;

        SKIP_IF_NO_MOUNT (f);
        if (geteuid () != 0) {
                g_test_skip ("only root may raise a priority");
                return;
        }
        task_dir = g_strdup_printf ("/proc/%d/task", (int) f->h->fs_pid);
        tasks = g_dir_open (task_dir, 0, &error);
        g_assert_no_error (error);
        while ((task = g_dir_read_name (tasks))) {
                g_autofree char *path = g_build_filename (task_dir, task, "stat", NULL);
                g_autofree char *stat = NULL;
                g_auto (GStrv) fields = NULL;
                const char *after_name;

                g_file_get_contents (path, &stat, NULL, &error);
                g_assert_no_error (error);
                /* Fields after the command name, which may hold spaces: state is field 3, nice
                 * field 19. */
                after_name = strrchr (stat, ')');
                g_assert_nonnull (after_name);
                fields = g_strsplit (after_name + 2, " ", -1);
                g_assert_cmpuint (g_strv_length (fields), >, 17);
                g_assert_cmpstr (fields[16], ==, "-10");
                n++;
        }
        /* The loop and the invalidation thread. */
        g_assert_cmpuint (n, ==, 2);
}

static void
test_read_write (Fixture *f, gconstpointer data)
{
        g_autofree char *path = in_share (f, "hello.txt");
        g_autofree char *host = on_host (f, "hello.txt");
        g_autoptr (GError) error = NULL;
        struct stat st, hst;
        char buf[64];
        int fd;

        SKIP_IF_NO_MOUNT (f);
        g_file_set_contents (path, "hello, world\n", -1, &error);
        g_assert_no_error (error);
        assert_contents (path, "hello, world\n");
        /* Written through to the host before close() returned. */
        assert_contents (host, "hello, world\n");

        g_assert_cmpint (stat (path, &st), ==, 0);
        g_assert_cmpint (stat (host, &hst), ==, 0);
        g_assert_cmpint (st.st_size, ==, 13);
        g_assert_cmpuint (st.st_ino, ==, hst.st_ino);
        g_assert_true (S_ISREG (st.st_mode));

        fd = open (path, O_WRONLY | O_APPEND | O_CLOEXEC);
        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (write (fd, "more\n", 5), ==, 5);
        g_assert_cmpint (close (fd), ==, 0);
        assert_contents (host, "hello, world\nmore\n");

        fd = open (path, O_RDWR | O_CLOEXEC);
        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (pwrite (fd, "HELLO", 5, 0), ==, 5);
        g_assert_cmpint (pread (fd, buf, sizeof buf, 7), ==, 11);
        g_assert_cmpmem (buf, 11, "world\nmore\n", 11);
        g_assert_cmpint (ftruncate (fd, 5), ==, 0);
        g_assert_cmpint (fsync (fd), ==, 0);
        g_assert_cmpint (close (fd), ==, 0);
        assert_contents (host, "HELLO");

        g_assert_cmpint (truncate (path, 0), ==, 0);
        assert_contents (path, "");
        g_assert_cmpint (chmod (path, 0600), ==, 0);
        g_assert_cmpint (stat (host, &hst), ==, 0);
        g_assert_cmpint (hst.st_mode & 07777, ==, 0600);
}

static void
test_host_changes (Fixture *f, gconstpointer data)
{
        g_autofree char *host = on_host (f, "from-host.txt");
        g_autofree char *path = in_share (f, "from-host.txt");
        g_autoptr (GError) error = NULL;

        SKIP_IF_NO_MOUNT (f);
        g_file_set_contents (host, "one", -1, &error);
        g_assert_no_error (error);
        assert_contents (path, "one");
        /* A different size is seen once the attribute timeout (1 s) has passed. */
        g_file_set_contents (host, "two two", -1, &error);
        g_assert_no_error (error);
        g_usleep (1200 * 1000);
        assert_contents (path, "two two");
        g_assert_cmpint (g_unlink (host), ==, 0);
        g_usleep (1200 * 1000);
        g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
}

static guint
count_entries (const char *path)
{
        DIR *d = opendir (path);
        struct dirent *de;
        guint n = 0;

        g_assert_nonnull (d);
        while ((de = readdir (d)))
                if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0)
                        n++;
        closedir (d);
        return n;
}

static void
test_directories (Fixture *f, gconstpointer data)
{
        g_autofree char *dir = in_share (f, "dir");
        g_autofree char *sub = in_share (f, "dir/sub/deeper");
        const guint n_files = 500; /* several READDIRPLUS rounds */
        struct stat st;

        SKIP_IF_NO_MOUNT (f);
        g_assert_cmpint (g_mkdir (dir, 0755), ==, 0);
        g_assert_cmpint (g_mkdir_with_parents (sub, 0700), ==, 0);
        g_assert_cmpint (stat (sub, &st), ==, 0);
        g_assert_true (S_ISDIR (st.st_mode));
        g_assert_cmpint (st.st_mode & 0777, ==, 0700);

        for (guint i = 0; i < n_files; i++) {
                g_autofree char *name =
                        g_strdup_printf ("%s/file-with-a-longish-name-%04u", dir, i);
                int fd = open (name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);

                g_assert_cmpint (fd, >=, 0);
                close (fd);
        }
        g_assert_cmpuint (count_entries (dir), ==, n_files + 1);
        /* Listing again (from the kernel's cache or not) gives the same. */
        g_assert_cmpuint (count_entries (dir), ==, n_files + 1);
        {
                g_autofree char *hdir = on_host (f, "dir");

                g_assert_cmpuint (count_entries (hdir), ==, n_files + 1);
        }
        for (guint i = 0; i < n_files; i++) {
                g_autofree char *name =
                        g_strdup_printf ("%s/file-with-a-longish-name-%04u", dir, i);

                g_assert_cmpint (g_unlink (name), ==, 0);
        }
        g_assert_cmpuint (count_entries (dir), ==, 1);
        g_assert_cmpint (g_rmdir (sub), ==, 0);
        {
                g_autofree char *mid = in_share (f, "dir/sub");

                g_assert_cmpint (g_rmdir (mid), ==, 0);
        }
        g_assert_cmpint (g_rmdir (dir), ==, 0);
        g_assert_false (g_file_test (dir, G_FILE_TEST_EXISTS));
}

static void
test_rename (Fixture *f, gconstpointer data)
{
        g_autofree char *a = in_share (f, "a");
        g_autofree char *b = in_share (f, "b");
        g_autofree char *d = in_share (f, "d");
        g_autofree char *db = in_share (f, "d/b");
        g_autoptr (GError) error = NULL;

        SKIP_IF_NO_MOUNT (f);
        g_file_set_contents (a, "A", -1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (g_rename (a, b), ==, 0);
        g_assert_false (g_file_test (a, G_FILE_TEST_EXISTS));
        assert_contents (b, "A");

        /* Over an existing file. */
        g_file_set_contents (a, "new", -1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (g_rename (a, b), ==, 0);
        assert_contents (b, "new");

        /* Into a subdirectory, and the open file follows. */
        g_assert_cmpint (g_mkdir (d, 0755), ==, 0);
        {
                int fd = open (b, O_RDONLY | O_CLOEXEC);
                char buf[8];

                g_assert_cmpint (fd, >=, 0);
                g_assert_cmpint (g_rename (b, db), ==, 0);
                g_assert_cmpint (pread (fd, buf, sizeof buf, 0), ==, 3);
                close (fd);
        }
        assert_contents (db, "new");

        /* renameat2 flags. */
        g_file_set_contents (a, "A", -1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (renameat2 (AT_FDCWD, a, AT_FDCWD, db, RENAME_NOREPLACE), ==, -1);
        g_assert_cmpint (errno, ==, EEXIST);
        g_assert_cmpint (renameat2 (AT_FDCWD, a, AT_FDCWD, db, RENAME_EXCHANGE), ==, 0);
        assert_contents (a, "new");
        assert_contents (db, "A");
}

static void
test_symlinks (Fixture *f, gconstpointer data)
{
        g_autofree char *target = in_share (f, "target.txt");
        g_autofree char *link = in_share (f, "link");
        g_autofree char *hlink = on_host (f, "link");
        g_autofree char *read_back = NULL;
        g_autoptr (GError) error = NULL;
        struct stat st;

        SKIP_IF_NO_MOUNT (f);
        g_file_set_contents (target, "via link", -1, &error);
        g_assert_no_error (error);
        g_assert_cmpint (symlink ("target.txt", link), ==, 0);
        g_assert_cmpint (lstat (link, &st), ==, 0);
        g_assert_true (S_ISLNK (st.st_mode));
        read_back = g_file_read_link (link, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (read_back, ==, "target.txt");
        assert_contents (link, "via link");
        g_clear_pointer (&read_back, g_free);
        read_back = g_file_read_link (hlink, &error);
        g_assert_no_error (error);
        g_assert_cmpstr (read_back, ==, "target.txt");
        g_assert_cmpint (g_unlink (link), ==, 0);
        g_assert_cmpint (g_unlink (target), ==, 0);
}

static void
test_xattrs (Fixture *f, gconstpointer data)
{
        g_autofree char *path = in_share (f, "x");
        g_autoptr (GError) error = NULL;
        char buf[64];

        SKIP_IF_NO_MOUNT (f);
        g_file_set_contents (path, "x", -1, &error);
        g_assert_no_error (error);
        /* No extended attributes in shares: "not supported", which cp -a and Python skip. */
        g_assert_cmpint (getxattr (path, "user.test", buf, sizeof buf), ==, -1);
        g_assert_cmpint (errno, ==, ENOTSUP);
        g_assert_cmpint (listxattr (path, buf, sizeof buf), ==, -1);
        g_assert_cmpint (errno, ==, ENOTSUP);
        g_assert_cmpint (setxattr (path, "user.test", "v", 1, 0), ==, -1);
        g_assert_cmpint (errno, ==, ENOTSUP);
        g_assert_cmpint (removexattr (path, "user.test"), ==, -1);
        g_assert_cmpint (errno, ==, ENOTSUP);
}

static void
test_many_open (Fixture *f, gconstpointer data)
{
        int fds[200];

        SKIP_IF_NO_MOUNT (f);
        /* Many handles at once, each its own file, then all closed. */
        for (guint i = 0; i < G_N_ELEMENTS (fds); i++) {
                g_autofree char *name = g_strdup_printf ("%s/open-%u", f->share, i);

                fds[i] = open (name, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
                g_assert_cmpint (fds[i], >=, 0);
                g_assert_cmpint (write (fds[i], name, strlen (name)), ==, (gssize) strlen (name));
        }
        for (guint i = 0; i < G_N_ELEMENTS (fds); i++) {
                g_autofree char *name = g_strdup_printf ("%s/open-%u", f->share, i);
                char buf[512];

                g_assert_cmpint (pread (fds[i], buf, sizeof buf, 0), ==, (gssize) strlen (name));
                g_assert_cmpint (close (fds[i]), ==, 0);
        }
}

/* One JSON line to corral-fsd's control socket; returns its one-line answer. */
static char *
control (const char *socket_path, const char *request)
{
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        GString *reply = g_string_new (NULL);
        int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char c;

        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpuint (strlen (socket_path), <, sizeof sun.sun_path);
        strcpy (sun.sun_path, socket_path);
        g_assert_cmpint (connect (fd, (struct sockaddr *) &sun, sizeof sun), ==, 0);
        g_assert_cmpint (write (fd, request, strlen (request)), ==, (gssize) strlen (request));
        g_assert_cmpint (write (fd, "\n", 1), ==, 1);
        while (read (fd, &c, 1) == 1 && c != '\n')
                g_string_append_c (reply, c);
        close (fd);
        return g_string_free (reply, FALSE);
}

static void
test_share_changes (void)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *host = g_dir_make_tmp ("corral-share-ctl-XXXXXX", &error);
        g_autofree char *spec = g_strdup_printf ("work:rw:%s", host);
        g_autofree char *sock = g_build_filename (host, "..", "corral-fsd-control.sock", NULL);
        g_autofree char *extra_host = g_build_filename (host, "extra-src", NULL);
        g_autofree char *req = NULL, *reply = NULL, *extra = NULL, *file = NULL;
        g_autoptr (MountHarness) h = NULL;
        const char *rm[] = { "rm", "-rf", host, NULL };
        struct stat st;
        int fd;

        g_assert_no_error (error);
        g_clear_pointer (&sock, g_free);
        sock = g_strdup_printf ("%s.sock", host);
        g_assert_cmpint (g_mkdir (extra_host, 0755), ==, 0);
        /* Long caches: only the server's notifications can make the guest see a change soon. */
        h = mount_harness_new_full ((const char *const[]){ spec, NULL },
                                    (const char *const[]){ "--control", sock, NULL },
                                    (const char *const[]){ "--attr-timeout", "60", NULL }, &error);
        if (mount_harness_skip_or_fail (error))
                goto out;
        extra = mount_harness_path (h, "extra", NULL);
        file = mount_harness_path (h, "extra", "new.txt");
        g_assert_cmpint (stat (extra, &st), ==, -1);

        req = g_strdup_printf ("{\"op\": \"add\", \"name\": \"extra\", \"path\": \"%s\", "
                               "\"mode\": \"ro\"}",
                               extra_host);
        reply = control (sock, req);
        g_assert_cmpstr (reply, ==, "{\"ok\":true}");
        g_assert_cmpint (stat (extra, &st), ==, 0);
        g_assert_true (S_ISDIR (st.st_mode));
        errno = 0;
        g_assert_cmpint (open (file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644), ==, -1);
        g_assert_cmpint (errno, ==, EROFS);

        g_free (reply);
        reply = control (sock, "{\"op\": \"set-mode\", \"name\": \"extra\", \"mode\": \"rw\"}");
        g_assert_cmpstr (reply, ==, "{\"ok\":true}");
        fd = open (file, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        g_assert_cmpint (fd, >=, 0);
        close (fd);

        /* Removed: gone at once, although the guest may cache names for 60 s. */
        g_free (reply);
        reply = control (sock, "{\"op\": \"remove\", \"name\": \"extra\"}");
        g_assert_cmpstr (reply, ==, "{\"ok\":true}");
        errno = 0;
        g_assert_cmpint (stat (extra, &st), ==, -1);
        g_assert_cmpint (errno, ==, ENOENT);
        g_assert_cmpint (stat (file, &st), ==, -1);
out:
        mount_harness_free (g_steal_pointer (&h));
        g_unlink (sock);
        mount_harness_run (NULL, rm, NULL, NULL);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
#define ADD(path, func) g_test_add (path, Fixture, NULL, fixture_setup, func, fixture_teardown)
        ADD ("/mount/basic/root", test_root);
        ADD ("/mount/basic/priority", test_priority);
        ADD ("/mount/basic/read-write", test_read_write);
        ADD ("/mount/basic/host-changes", test_host_changes);
        ADD ("/mount/basic/directories", test_directories);
        ADD ("/mount/basic/rename", test_rename);
        ADD ("/mount/basic/symlinks", test_symlinks);
        ADD ("/mount/basic/xattrs", test_xattrs);
        ADD ("/mount/basic/many-open", test_many_open);
#undef ADD
        g_test_add_func ("/mount/basic/share-changes", test_share_changes);
        return g_test_run ();
}
