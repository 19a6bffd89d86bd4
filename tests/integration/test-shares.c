/* test-shares.c — the app's side of shared folders (mounts/corral-shares): changing a VM's share
 * list with its file server running (through the control socket) and stopped (shares.json), and
 * waiting until the guest has mounted the shares (a real corral-fsd, the guest played here).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "corral-policy.h"
#include "corral-shares.h"
#include "proto.h"

typedef struct {
        char *root; /* temp: vm/ (the VM's folder) and the shared folder next to it */
        char *vm_dir;
        char *folder;
} Fixture;

static void
setup (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;

        f->root = g_dir_make_tmp ("corral-shares-XXXXXX", &error);
        g_assert_no_error (error);
        /* Side by side: a folder inside the VM's own folder is never shared (F20). */
        f->vm_dir = g_build_filename (f->root, "vm", NULL);
        f->folder = g_build_filename (f->root, "My Notes", NULL);
        g_assert_cmpint (g_mkdir (f->vm_dir, 0700), ==, 0);
        g_assert_cmpint (g_mkdir (f->folder, 0755), ==, 0);
}

static void
teardown (Fixture *f, gconstpointer data)
{
        g_autofree char *cmd = g_strdup_printf ("rm -rf '%s'", f->root);

        g_assert_cmpint (system (cmd), ==, 0);
        g_free (f->root);
        g_free (f->vm_dir);
        g_free (f->folder);
}

static const CorralShare *
find (GPtrArray *list, const char *name)
{
        for (guint i = 0; list && i < list->len; i++) {
                const CorralShare *s = list->pdata[i];
                if (g_str_equal (s->name, name))
                        return s;
        }
        return NULL;
}

static const CorralShare *
get (GPtrArray *list, const char *name)
{
        const CorralShare *s = find (list, name);

        if (!s)
                g_error ("no share %s in the list", name);
        return s;
}

/* The space for originals kept for undo (SECURITY.md F21): the default until chosen, a choice
 * out of range refused with nothing changed, kept in shares.json. */
static void
kept_space (Fixture *f)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *config = g_build_filename (f->vm_dir, "shares.json", NULL);
        g_autofree char *text = NULL;
        guint64 used = 1, space = 0;

        g_assert_true (corral_shares_kept_space (f->vm_dir, &used, &space, &error));
        g_assert_no_error (error);
        g_assert_cmpuint (used, ==, 0);
        g_assert_cmpuint (space, ==, (guint64) FS_KEPT_SPACE_DEFAULT_MIB << 20);

        g_assert_true (corral_shares_set_kept_space (f->vm_dir, 4096, &error));
        g_assert_no_error (error);
        g_assert_true (corral_shares_kept_space (f->vm_dir, NULL, &space, &error));
        g_assert_cmpuint (space, ==, (guint64) 4096 << 20);
        g_assert_true (g_file_get_contents (config, &text, NULL, NULL));
        g_assert_nonnull (strstr (text, "\"kept_space_mib\""));

        g_assert_false (
                corral_shares_set_kept_space (f->vm_dir, FS_KEPT_SPACE_MIN_MIB - 1, &error));
        g_assert_nonnull (strstr (error->message, "between"));
        g_clear_error (&error);
        g_assert_false (
                corral_shares_set_kept_space (f->vm_dir, FS_KEPT_SPACE_MAX_MIB + 1, &error));
        g_clear_error (&error);
        g_assert_true (corral_shares_kept_space (f->vm_dir, NULL, &space, &error));
        g_assert_cmpuint (space, ==, (guint64) 4096 << 20);

        /* 0: back to the default, no longer written down. */
        g_assert_true (corral_shares_set_kept_space (f->vm_dir, 0, &error));
        g_assert_true (corral_shares_kept_space (f->vm_dir, NULL, &space, &error));
        g_assert_cmpuint (space, ==, (guint64) FS_KEPT_SPACE_DEFAULT_MIB << 20);
        g_clear_pointer (&text, g_free);
        g_assert_true (g_file_get_contents (config, &text, NULL, NULL));
        g_assert_null (strstr (text, "kept_space_mib"));
}

/* The common checks, whichever way the changes travel. */
static void
exercise (Fixture *f)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) list = NULL;
        g_autofree char *name = NULL;
        const char *protect[] = { "deploy/", NULL };
        const CorralShare *s;

        g_assert_true (corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW_NODELETE, NULL, protect,
                                          &name, &error));
        g_assert_no_error (error);
        g_assert_cmpstr (name, ==, "My Notes");
        list = corral_shares_list (f->vm_dir, &error);
        g_assert_no_error (error);
        s = get (list, "My Notes");
        g_assert_cmpint (s->mode, ==, FS_MODE_RW_NODELETE);
        g_assert_cmpstr (s->path, ==, f->folder);
        g_assert_cmpstr (s->protect[0], ==, "deploy/");
        g_clear_pointer (&list, g_ptr_array_unref);

        /* The same name twice, a missing folder, a bad name: clear errors, nothing changes. */
        g_assert_false (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RO, NULL, NULL, NULL, &error));
        g_assert_nonnull (strstr (error->message, "already exists"));
        g_clear_error (&error);
        g_assert_false (corral_shares_add (f->vm_dir, "/nonexistent/folder", FS_MODE_RO, NULL, NULL,
                                           NULL, &error));
        g_assert_nonnull (strstr (error->message, "not a folder"));
        g_clear_error (&error);
        /* The VM's own folder, or one inside it, is never shared (F20), online or not. */
        {
                g_autofree char *inside = g_build_filename (f->vm_dir, "sub", NULL);
                g_assert_cmpint (g_mkdir (inside, 0700), ==, 0);
                g_assert_false (corral_shares_add (f->vm_dir, f->vm_dir, FS_MODE_RO, "vm", NULL,
                                                   NULL, &error));
                g_assert_nonnull (strstr (error->message, "Corral's own files"));
                g_clear_error (&error);
                g_assert_false (corral_shares_add (f->vm_dir, inside, FS_MODE_RO, "sub", NULL, NULL,
                                                   &error));
                g_assert_nonnull (strstr (error->message, "Corral's own files"));
                g_clear_error (&error);
                g_assert_cmpint (g_rmdir (inside), ==, 0);
        }
        g_assert_false (corral_shares_add (f->vm_dir, f->folder, FS_MODE_RO, ".hidden", NULL, NULL,
                                           &error));
        g_clear_error (&error);

        g_assert_true (corral_shares_set_mode (f->vm_dir, "My Notes", FS_MODE_RO, &error));
        list = corral_shares_list (f->vm_dir, &error);
        s = get (list, "My Notes");
        g_assert_cmpint (s->mode, ==, FS_MODE_RO);
        g_clear_pointer (&list, g_ptr_array_unref);
        g_assert_false (corral_shares_set_mode (f->vm_dir, "nope", FS_MODE_RO, &error));
        g_assert_nonnull (strstr (error->message, "no shared folder named"));
        g_clear_error (&error);

        g_assert_true (corral_shares_remove (f->vm_dir, "My Notes", &error));
        list = corral_shares_list (f->vm_dir, &error);
        g_assert_null (find (list, "My Notes"));

        kept_space (f);
}

static void
test_offline (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *config = g_build_filename (f->vm_dir, "shares.json", NULL);
        g_autofree char *text = NULL;

        /* No VM port: the server cannot start, and says why. */
        g_assert_false (corral_shares_ensure_server (f->vm_dir, &error));
        g_assert_nonnull (strstr (error->message, "not running"));
        g_clear_error (&error);

        exercise (f);
        g_assert_true (g_file_get_contents (config, &text, NULL, NULL));
        g_assert_nonnull (strstr (text, "\"shares\""));

        /* A share whose folder went away is dropped when the list is read again. */
        g_assert_true (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "n", NULL, NULL, &error));
        g_assert_cmpint (g_rmdir (f->folder), ==, 0);
        {
                g_autoptr (GPtrArray) list = corral_shares_list (f->vm_dir, &error);
                g_assert_no_error (error);
                g_assert_cmpuint (list->len, ==, 0);
        }
        /* A malformed shares.json is an error, not an empty list. */
        g_assert_true (g_file_set_contents (config, "{\"shares\": 7}", -1, NULL));
        g_assert_null (corral_shares_list (f->vm_dir, &error));
        g_assert_nonnull (error);
        g_clear_error (&error);
        /* So is a space for originals that is not a number of MiB in range. */
        {
                const char *bad[] = { "5", "-1", "1e300", "2048.5", "\"2048\"", "4294967296" };

                for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
                        g_autofree char *json = g_strdup_printf (
                                "{\"shares\": [], \"kept_space_mib\": %s}", bad[i]);

                        g_assert_true (g_file_set_contents (config, json, -1, NULL));
                        g_assert_null (corral_shares_list (f->vm_dir, &error));
                        g_assert_nonnull (strstr (error->message, "kept_space_mib"));
                        g_clear_error (&error);
                        g_assert_false (corral_shares_kept_space (f->vm_dir, NULL, NULL, &error));
                        g_clear_error (&error);
                }
        }
}

/* Waits until the file server accepts on its control socket (the socket file exists a moment
 * before it listens, longer under sanitizers and load). */
static void
wait_control (const char *control)
{
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (control);
        g_autoptr (GSocketClient) client = g_socket_client_new ();

        for (int i = 0; i < 3000; i++) {
                g_autoptr (GSocketConnection) conn =
                        g_socket_client_connect (client, G_SOCKET_CONNECTABLE (addr), NULL, NULL);

                if (conn)
                        return;
                g_usleep (10000);
        }
        g_error ("the file server never listened on %s", control);
}

static char *control_line (const char *control, const char *line);

static void
test_online (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *control = g_build_filename (f->vm_dir, "fsd.sock", NULL);
        g_autofree char *config = g_build_filename (f->vm_dir, "shares.json", NULL);
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
        g_autoptr (GSubprocess) fsd = NULL;
        g_autofree char *text = NULL;
        int sv[2];

        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_subprocess_launcher_take_fd (l, sv[1], 3);
        fsd = g_subprocess_launcher_spawn (l, &error, g_getenv ("CORRAL_FSD_PATH"), "--fd", "3",
                                           "--control", control, "--config", config, NULL);
        g_assert_no_error (error);
        wait_control (control);
        /* A running server is found through its control socket. */
        g_assert_true (corral_shares_ensure_server (f->vm_dir, &error));
        g_assert_no_error (error);

        exercise (f);
        /* The server keeps shares.json itself. */
        g_assert_true (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "kept", NULL, NULL, &error));
        g_assert_true (g_file_get_contents (config, &text, NULL, NULL));
        g_assert_nonnull (strstr (text, "\"kept\""));

        /* The control socket takes no space that is not a whole number of MiB in range. */
        {
                const char *bad[] = { "-1", "1e300", "1.5", "\"2048\"", "10", "null" };

                for (guint i = 0; i < G_N_ELEMENTS (bad); i++) {
                        g_autofree char *line =
                                g_strdup_printf ("{\"op\":\"set-kept-space\",\"mib\":%s}", bad[i]);
                        g_autofree char *reply = control_line (control, line);

                        g_assert_nonnull (strstr (reply, "\"error\""));
                }
        }

        close (sv[0]); /* the VM's port closes: the server leaves */
        g_subprocess_wait_check (fsd, NULL, &error);
        g_assert_no_error (error);
}

static gboolean
exists (const char *dir, const char *name)
{
        g_autofree char *p = g_build_filename (dir, name, NULL);

        return g_file_test (p, G_FILE_TEST_EXISTS | G_FILE_TEST_IS_SYMLINK);
}

/* What the app does on the person's yes: the delete names the entry the server reported when
 * the question was put. */
static gboolean
approve_delete (Fixture *f, const char *share, const char *path, GError **error)
{
        g_autoptr (CorralShareEntry) entry =
                corral_shares_approved_stat (f->vm_dir, share, path, error);

        return entry && corral_shares_approved_delete (f->vm_dir, share, path, entry->id, error);
}

/* One raw line on the control socket; the reply line. */
static char *
control_line (const char *control, const char *line)
{
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (control);
        g_autoptr (GSocketClient) client = g_socket_client_new ();
        g_autoptr (GError) error = NULL;
        g_autoptr (GSocketConnection) conn =
                g_socket_client_connect (client, G_SOCKET_CONNECTABLE (addr), NULL, &error);
        g_autoptr (GDataInputStream) in = NULL;
        GOutputStream *out;

        g_assert_no_error (error);
        out = g_io_stream_get_output_stream (G_IO_STREAM (conn));
        g_assert_true (g_output_stream_write_all (out, line, strlen (line), NULL, NULL, &error));
        g_assert_true (g_output_stream_write_all (out, "\n", 1, NULL, NULL, &error));
        in = g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM (conn)));
        return g_data_input_stream_read_line (in, NULL, NULL, &error);
}

/* The person is asked about one file: what the server reports for the question, and the delete
 * refused when something else is at that path by the time of the answer (renamed onto it, or
 * deleted and made again) or when the request names no file at all (SECURITY.md F16). */
static void
approved_delete_identity (Fixture *f, const char *control)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralShareEntry) entry = NULL;
        g_autofree char *target = g_build_filename (f->folder, "report.txt", NULL);
        g_autofree char *draft = g_build_filename (f->folder, "draft.txt", NULL);
        g_autofree char *contents = NULL, *reply = NULL;

        g_assert_true (g_file_set_contents (target, "old report", -1, NULL));
        g_assert_true (g_file_set_contents (draft, "the person's draft", -1, NULL));
        entry = corral_shares_approved_stat (f->vm_dir, "notes", "report.txt", &error);
        g_assert_no_error (error);
        g_assert_cmpint (entry->type, ==, G_FILE_TYPE_REGULAR);
        g_assert_cmpint (entry->mode, ==, FS_MODE_RW_NODELETE);
        g_assert_cmpstr (entry->folder, ==, f->folder);
        g_assert_cmpuint (entry->size, ==, strlen ("old report"));

        /* renamed onto the path between question and answer */
        g_assert_cmpint (g_rename (draft, target), ==, 0);
        g_assert_false (corral_shares_approved_delete (f->vm_dir, "notes", "report.txt", entry->id,
                                                       &error));
        g_assert_nonnull (strstr (error->message, "no longer the file the person was asked about"));
        g_clear_error (&error);
        g_assert_true (g_file_get_contents (target, &contents, NULL, NULL));
        g_assert_cmpstr (contents, ==, "the person's draft");
        g_clear_pointer (&entry, corral_share_entry_free);

        /* deleted and made again (the inode number may well be the same) */
        entry = corral_shares_approved_stat (f->vm_dir, "notes", "report.txt", &error);
        g_assert_no_error (error);
        g_assert_cmpint (g_unlink (target), ==, 0);
        g_assert_true (g_file_set_contents (target, "new", -1, NULL));
        g_assert_false (corral_shares_approved_delete (f->vm_dir, "notes", "report.txt", entry->id,
                                                       &error));
        g_clear_error (&error);
        g_assert_true (exists (f->folder, "report.txt"));

        /* no identity, or a made-up one: refused */
        reply = control_line (control, "{\"op\":\"approved-delete\",\"name\":\"notes\","
                                       "\"path\":\"report.txt\"}");
        g_assert_nonnull (strstr (reply, "\"ok\":false"));
        g_free (reply);
        reply = control_line (control, "{\"op\":\"approved-delete\",\"name\":\"notes\","
                                       "\"path\":\"report.txt\",\"id\":\"1:2:3:0.0\"}");
        g_assert_nonnull (strstr (reply, "\"ok\":false"));
        g_assert_true (exists (f->folder, "report.txt"));
        /* still the same file: deleted */
        g_assert_true (approve_delete (f, "notes", "report.txt", &error));
        g_assert_no_error (error);
        g_assert_false (exists (f->folder, "report.txt"));
}

/* What the person approved is done on the host, exactly, with a copy kept and an audit record;
 * approval never reaches protected paths, paths leaving the share, or full folders
 * (SECURITY.md F16). */
static void
test_approved_delete (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *control = g_build_filename (f->vm_dir, "fsd.sock", NULL);
        g_autofree char *audit = g_build_filename (f->vm_dir, "audit.jsonl", NULL);
        g_autofree char *keep = g_build_filename (f->vm_dir, "kept", NULL);
        g_autofree char *outside = g_build_filename (f->vm_dir, "outside.txt", NULL);
        g_autofree char *cmd = NULL, *text = NULL, *kept = NULL;
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
        g_autoptr (GSubprocess) fsd = NULL;
        g_autofree char *share_arg = g_strdup_printf ("notes:rw-nodelete:%s", f->folder);
        const char *bad[] = { "../outside.txt", "/etc/passwd", "a//b", "./old.txt", "", NULL };
        int sv[2];

        /* no server: a clear error, nothing deleted */
        g_assert_false (approve_delete (f, "notes", "old.txt", &error));
        g_clear_error (&error);
        g_assert_true (g_file_set_contents (outside, "outside", -1, NULL));
        cmd = g_strdup_printf ("cd '%s' && echo old > old.txt && mkdir -p empty full .git && "
                               "echo x > full/x && echo cfg > .git/config && "
                               "ln -s ../outside.txt link",
                               f->folder);
        g_assert_cmpint (system (cmd), ==, 0);
        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_subprocess_launcher_take_fd (l, sv[1], 3);
        fsd = g_subprocess_launcher_spawn (l, &error, g_getenv ("CORRAL_FSD_PATH"), "--fd", "3",
                                           "--control", control, "--audit", audit, "--keep-dir",
                                           keep, "--share", share_arg, NULL);
        g_assert_no_error (error);
        wait_control (control);

        approve_delete (f, "notes", "old.txt", &error);
        g_assert_no_error (error);
        g_assert_false (exists (f->folder, "old.txt"));
        /* the copy */
        cmd = (g_free (cmd), g_strdup_printf ("sh -c \"cat '%s'/notes/*-old.txt\"", keep));
        g_assert_true (g_spawn_command_line_sync (cmd, &kept, NULL, NULL, NULL));
        g_assert_cmpstr (kept, ==, "old\n");
        /* a link goes, its target stays; an empty folder goes */
        g_assert_true (approve_delete (f, "notes", "link", &error));
        g_assert_false (exists (f->folder, "link"));
        g_assert_true (g_file_test (outside, G_FILE_TEST_EXISTS));
        g_assert_true (approve_delete (f, "notes", "empty", &error));
        g_assert_false (exists (f->folder, "empty"));
        g_assert_no_error (error);
        /* refused: a full folder, protected paths, paths that are not in the share */
        g_assert_false (approve_delete (f, "notes", "full", &error));
        g_clear_error (&error);
        g_assert_true (exists (f->folder, "full"));
        g_assert_false (approve_delete (f, "notes", ".git/config", &error));
        g_assert_nonnull (strstr (error->message, "protected"));
        g_clear_error (&error);
        g_assert_false (approve_delete (f, "notes", ".git", &error));
        g_clear_error (&error);
        g_assert_true (exists (f->folder, ".git/config"));
        for (const char **p = bad; *p; p++) {
                g_assert_false (approve_delete (f, "notes", *p, &error));
                g_clear_error (&error);
        }
        g_assert_false (approve_delete (f, "nope", "full/x", &error));
        g_clear_error (&error);
        g_assert_true (g_file_test (outside, G_FILE_TEST_EXISTS));
        approved_delete_identity (f, control);
        g_assert_true (g_file_get_contents (audit, &text, NULL, NULL));
        g_assert_nonnull (strstr (text, "\"rule\":\"approved-by-person\""));

        close (sv[0]); /* the VM's port closes: the server leaves */
        g_subprocess_wait_check (fsd, NULL, &error);
        g_assert_no_error (error);
}

/* The organisation's policy reaches the file server that corral_shares_ensure_server() starts:
 * a damaged policy is reported to the caller by name and no server starts; a valid one
 * protects its paths in every share, even from what the person approves. */
static void
test_managed_policy (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *policy = g_build_filename (f->vm_dir, "managed.json", NULL);
        g_autofree char *port = g_build_filename (f->vm_dir, "fs.sock", NULL);
        g_autofree char *log = g_build_filename (f->vm_dir, "fsd.log", NULL);
        g_autofree char *deploy = g_build_filename (f->folder, "deploy", NULL);
        g_autofree char *script = g_build_filename (deploy, "run.sh", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autoptr (GSocket) listener = NULL, vm_end = NULL;
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (port);

        g_assert_cmpint (g_mkdir (deploy, 0755), ==, 0);
        g_assert_true (g_file_set_contents (script, "deploy", -1, NULL));
        g_assert_true (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "notes", NULL, NULL, &error));
        g_assert_no_error (error);
        /* the VM's side of the port, as QEMU would listen on it */
        listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, 0, &error);
        g_assert_true (g_socket_bind (listener, addr, TRUE, &error));
        g_assert_true (g_socket_listen (listener, &error));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);

        g_assert_true (g_file_set_contents (
                policy, "{\"sharedFolders\": {\"protectedPaths\": [\"../deploy\"]}}", -1, NULL));
        g_assert_false (corral_shares_ensure_server (f->vm_dir, &error));
        g_assert_nonnull (strstr (error->message, policy));
        g_assert_nonnull (strstr (error->message, "protectedPaths[0]"));
        g_clear_error (&error);
        g_assert_false (g_file_test (log, G_FILE_TEST_EXISTS)); /* nothing was started */

        g_assert_true (g_file_set_contents (
                policy, "{\"sharedFolders\": {\"protectedPaths\": [\"deploy/\"]}}", -1, NULL));
        g_assert_true (corral_shares_ensure_server (f->vm_dir, &error));
        g_assert_no_error (error);
        vm_end = g_socket_accept (listener, NULL, &error);
        g_assert_no_error (error);
        g_assert_false (approve_delete (f, "notes", "deploy/run.sh", &error));
        g_assert_nonnull (strstr (error->message, "protected"));
        g_clear_error (&error);
        g_assert_true (g_file_test (script, G_FILE_TEST_EXISTS));

        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        g_socket_close (vm_end, NULL); /* the VM's port closes: the server leaves */
}

/* The organisation's limits on which folders are shared and how (sharedFolders.deniedFolders,
 * .maxMode) hold however a share is asked for: offline in shares.json, through the running
 * server's control socket, through a link to a forbidden folder, and in a shares.json written
 * by hand before the server starts (SECURITY.md F23). */
static void
test_managed_folders (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *policy = g_build_filename (f->root, "managed.json", NULL);
        g_autofree char *secret = g_build_filename (f->root, "Secret", NULL);
        g_autofree char *inside = g_build_filename (secret, "inside", NULL);
        g_autofree char *link = g_build_filename (f->root, "link-to-secret", NULL);
        g_autofree char *control = g_build_filename (f->vm_dir, "fsd.sock", NULL);
        g_autofree char *config = g_build_filename (f->vm_dir, "shares.json", NULL);
        g_autofree char *saved = g_strdup (g_getenv ("CORRAL_MANAGED_POLICY"));
        g_autofree char *text = NULL, *by_hand = NULL, *audit_text = NULL;
        g_autofree char *audit = g_build_filename (f->vm_dir, "audit.jsonl", NULL);
        g_autofree char *journal = g_build_filename (f->root, "journal.sock", NULL);
        struct sockaddr_un journal_addr = { .sun_family = AF_UNIX };
        int journal_fd;
        g_autoptr (GSubprocessLauncher) l = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_NONE);
        g_autoptr (GSubprocess) fsd = NULL;
        g_autoptr (GPtrArray) list = NULL;
        int sv[2];

        g_assert_cmpint (g_mkdir (secret, 0755), ==, 0);
        g_assert_cmpint (g_mkdir (inside, 0755), ==, 0);
        g_assert_cmpint (symlink (secret, link), ==, 0);
        text = g_strdup_printf ("{\"sharedFolders\": {\"maxMode\": \"rw-nodelete\", "
                                "\"deniedFolders\": [\"%s\"]}, \"audit\": {\"copyTo\": "
                                "[\"journal\"]}}",
                                secret);
        g_assert_true (g_file_set_contents (policy, text, -1, NULL));
        g_setenv ("CORRAL_MANAGED_POLICY", policy, TRUE);

        /* Offline (shares.json): wider than allowed, and a forbidden folder, are refused. */
        g_assert_false (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "notes", NULL, NULL, &error));
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        g_assert_nonnull (strstr (error->message, "“Can edit, but not delete” at most"));
        g_assert_nonnull (strstr (error->message, "set by your organisation"));
        g_clear_error (&error);
        g_assert_true (corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW_NODELETE, "notes", NULL,
                                          NULL, &error));
        g_assert_no_error (error);
        g_assert_false (corral_shares_set_mode (f->vm_dir, "notes", FS_MODE_RW, &error));
        g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
        g_clear_error (&error);
        g_assert_true (corral_shares_set_mode (f->vm_dir, "notes", FS_MODE_RO, &error));
        for (guint i = 0; i < 3; i++) {
                const char *folder = i == 0 ? secret : i == 1 ? inside : link;

                g_assert_false (
                        corral_shares_add (f->vm_dir, folder, FS_MODE_RO, "s", NULL, NULL, &error));
                g_assert_error (error, CORRAL_POLICY_ERROR, CORRAL_POLICY_ERROR_BLOCKED);
                g_assert_nonnull (strstr (error->message, "may not be shared"));
                g_clear_error (&error);
        }
        /* Removing never needs the policy: it only narrows what the guest sees. */
        g_assert_true (corral_shares_remove (f->vm_dir, "notes", &error));

        /* A shares.json written by hand with the forbidden folder: the server skips it. */
        by_hand = g_strdup_printf ("{\"shares\": [{\"name\": \"s\", \"path\": \"%s\", "
                                   "\"mode\": \"ro\"}, {\"name\": \"n\", \"path\": \"%s\", "
                                   "\"mode\": \"rw\"}]}",
                                   secret, f->folder);
        g_assert_true (g_file_set_contents (config, by_hand, -1, NULL));
        g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
        g_subprocess_launcher_take_fd (l, sv[1], 3);
        /* audit.copyTo "journal": a socket standing in for journald's gets each line too. */
        journal_fd = socket (AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        g_strlcpy (journal_addr.sun_path, journal, sizeof journal_addr.sun_path);
        g_assert_cmpint (bind (journal_fd, (struct sockaddr *) &journal_addr, sizeof journal_addr),
                         ==, 0);
        g_subprocess_launcher_setenv (l, "CORRAL_JOURNAL_SOCKET", journal, TRUE);
        fsd = g_subprocess_launcher_spawn (l, &error, g_getenv ("CORRAL_FSD_PATH"), "--fd", "3",
                                           "--control", control, "--config", config, "--policy",
                                           policy, "--audit", audit, NULL);
        g_assert_no_error (error);
        wait_control (control);
        {
                char buf[65536];
                ssize_t n = recv (journal_fd, buf, sizeof buf - 1, MSG_DONTWAIT);

                g_assert_cmpint (n, >, 0);
                buf[n] = '\0';
                g_assert_nonnull (strstr (buf, "SYSLOG_IDENTIFIER=corral-audit\n"));
                g_assert_nonnull (strstr (buf, "MESSAGE={\"time\""));
                g_assert_nonnull (strstr (buf, "\"source\":\"policy\""));
                close (journal_fd);
        }
        /* The task's audit log starts with the policy the server runs under (SECURITY.md M5). */
        {
                g_autoptr (CorralPolicy) loaded = corral_policy_load (policy, &error);
                g_autofree char *record = g_strdup_printf (
                        "\"source\":\"policy\",\"digest\":\"%s\",\"sources\":[\"%s\"]}",
                        corral_policy_get_digest (loaded), policy);

                g_assert_no_error (error);
                g_assert_true (g_file_get_contents (audit, &audit_text, NULL, NULL));
                g_assert_nonnull (strstr (audit_text, record));
        }
        list = corral_shares_list (f->vm_dir, &error);
        g_assert_no_error (error);
        g_assert_cmpuint (list->len, ==, 0); /* "n" asked for more than rw-nodelete */

        /* Online: the running server refuses the same. */
        g_assert_false (corral_shares_add (f->vm_dir, link, FS_MODE_RO, "s", NULL, NULL, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_FAILED);
        g_assert_nonnull (strstr (error->message, "may not be shared"));
        g_clear_error (&error);
        g_assert_false (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "notes", NULL, NULL, &error));
        g_assert_nonnull (strstr (error->message, "at most"));
        g_clear_error (&error);
        g_assert_true (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RO, "notes", NULL, NULL, &error));
        g_assert_false (corral_shares_set_mode (f->vm_dir, "notes", FS_MODE_RW, &error));
        g_assert_nonnull (strstr (error->message, "set by your organisation"));
        g_clear_error (&error);

        g_setenv ("CORRAL_MANAGED_POLICY", saved ? saved : "", TRUE);
        close (sv[0]);
        g_subprocess_wait_check (fsd, NULL, &error);
        g_assert_no_error (error);
}

/* The guest's side of the VM's port ------------------------------------------------------------ */

/* The VM's end of a connection from corral-fsd, as QEMU holds it. */
typedef struct {
        GSocket *socket;
        ProtoDecoder dec;
        char *nonce; /* of the server's HELLO */
} GuestEnd;

static void
guest_end_free (GuestEnd *g)
{
        g_object_unref (g->socket);
        proto_decoder_clear (&g->dec);
        g_free (g->nonce);
        g_free (g);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (GuestEnd, guest_end_free)

/* Accepts the server's connection and reads its HELLO. */
static GuestEnd *
guest_accept (GSocket *listener)
{
        g_autoptr (GError) error = NULL;
        GuestEnd *g = g_new0 (GuestEnd, 1);
        ProtoFrame f;
        cJSON *hello = NULL;
        const char *nonce = NULL;

        g->socket = g_socket_accept (listener, NULL, &error);
        g_assert_no_error (error);
        g_assert_cmpint (proto_decoder_init (&g->dec, 0), ==, 0);
        while (proto_decoder_next (&g->dec, &f) != 1) {
                size_t room;
                uint8_t *space = proto_decoder_space (&g->dec, &room);
                gssize n = g_socket_receive (g->socket, (char *) space, room, NULL, &error);

                g_assert_no_error (error);
                g_assert_cmpint (n, >, 0);
                proto_decoder_commit (&g->dec, (size_t) n);
        }
        g_assert_cmpint (f.type, ==, PROTO_FRAME_HELLO);
        g_assert_cmpint (proto_json_parse (f.payload, f.length, &hello), ==, 0);
        g_assert_cmpint (proto_json_get_string (hello, "nonce", 64, &nonce), ==, 0);
        g->nonce = g_strdup (nonce);
        cJSON_Delete (hello);
        return g;
}

/* What corral-fs sends once it has mounted /workspace: the server's nonce back. */
static void
guest_say_hello (GuestEnd *g, const char *role, const char *nonce)
{
        g_autoptr (GError) error = NULL;
        g_autofree uint8_t *buf = NULL;
        cJSON *hello = cJSON_CreateObject ();
        size_t len = 0;

        cJSON_AddNumberToObject (hello, "version", 1);
        cJSON_AddStringToObject (hello, "role", role);
        cJSON_AddStringToObject (hello, "nonce", nonce);
        g_assert_cmpint (proto_frame_build_json (PROTO_FRAME_HELLO, hello, &buf, &len), ==, 0);
        cJSON_Delete (hello);
        g_assert_cmpint (g_socket_send (g->socket, (const char *) buf, len, NULL, &error), ==,
                         (gssize) len);
        g_assert_no_error (error);
}

typedef struct {
        GuestEnd *guest;
        gint answered; /* set before the answer leaves */
} LateGuest;

/* A guest whose client mounts a moment after the caller starts waiting. */
static gpointer
late_guest (gpointer data)
{
        LateGuest *lg = data;

        g_usleep (200 * 1000);
        g_atomic_int_set (&lg->answered, 1);
        guest_say_hello (lg->guest, "fs-client", lg->guest->nonce);
        return NULL;
}

/* Waits while a late guest answers; TRUE if the wait ended only after the answer. */
static gboolean
wait_for_late_guest (Fixture *f, GuestEnd *guest)
{
        g_autoptr (GError) error = NULL;
        LateGuest lg = { .guest = guest };
        GThread *thread = g_thread_new ("late-guest", late_guest, &lg);
        gboolean ok = corral_shares_wait_mounted (f->vm_dir, 20000, NULL, &error);

        g_assert_no_error (error);
        g_assert_true (ok);
        g_thread_join (thread);
        return g_atomic_int_get (&lg.answered);
}

static void
assert_not_mounted (Fixture *f, guint timeout_ms)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *console = g_build_filename (f->vm_dir, "console.log", NULL);

        g_assert_false (corral_shares_wait_mounted (f->vm_dir, timeout_ms, NULL, &error));
        g_assert_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
        /* The person (or whoever reads the error) is sent where the guest said why. */
        if (!strstr (error->message, console))
                g_error ("The error does not name %s: %s", console, error->message);
}

/* SECURITY.md F17: a VM is ready only once the guest's file client has answered its file
 * server's HELLO (corral-fs does so only after mounting /workspace), so the first command sees
 * the shares. Never on a wrong answer, and never on an answer to a server that has gone. */
static void
test_wait_mounted (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *port = g_build_filename (f->vm_dir, "fs.sock", NULL);
        g_autofree char *control = g_build_filename (f->vm_dir, "fsd.sock", NULL);
        g_autoptr (GSocket) listener = NULL;
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (port);
        g_autoptr (GuestEnd) guest = NULL, next = NULL;

        /* the VM's side of the port, as QEMU would listen on it */
        listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, 0, &error);
        g_assert_true (g_socket_bind (listener, addr, TRUE, &error));
        g_assert_true (g_socket_listen (listener, &error));

        /* Nothing shared: nothing to wait for, and no server is started for it. */
        g_assert_true (corral_shares_wait_mounted (f->vm_dir, 1000, NULL, &error));
        g_assert_no_error (error);
        g_assert_false (g_file_test (control, G_FILE_TEST_EXISTS));

        /* Shared, but the guest never answers: the server is started, the wait fails. */
        g_assert_true (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "notes", NULL, NULL, &error));
        assert_not_mounted (f, 300);
        guest = guest_accept (listener);
        assert_not_mounted (f, 300);
        /* Answers that are not the client's answer to this server's HELLO do not count. */
        guest_say_hello (guest, "fs-client", "00112233445566778899aabbccddeeff");
        guest_say_hello (guest, "fs-server", guest->nonce);
        assert_not_mounted (f, 300);

        /* The answer comes a moment later: the wait ends with it, not before. */
        g_assert_true (wait_for_late_guest (f, guest));
        /* Mounted: at once from now on. */
        g_assert_true (corral_shares_wait_mounted (f->vm_dir, 1, NULL, &error));
        g_assert_no_error (error);

        /* The VM's port closes (the VM stopped, or QEMU restarted): what the old server saw
         * no longer counts, even before it has left. The next server (started by the wait, as
         * the port is still there) needs its own answer. */
        g_clear_pointer (&guest, guest_end_free);
        assert_not_mounted (f, 300);
        next = guest_accept (listener);
        g_assert_true (wait_for_late_guest (f, next));

        g_socket_close (next->socket, NULL); /* the VM's port closes: the server leaves */
}

static gpointer
release_lock_later (gpointer data)
{
        g_usleep (1500 * 1000);
        close (GPOINTER_TO_INT (data));
        return NULL;
}

/* A server that is leaving (its VM's port closed) no longer answers but holds fsd.lock for a
 * moment longer (under load, for seconds), so the server started meanwhile leaves at once.
 * Starting the file server still succeeds: it is started again once the lock is free. */
static void
test_leaving_server (Fixture *f, gconstpointer data)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *port = g_build_filename (f->vm_dir, "fs.sock", NULL);
        g_autofree char *lock = g_build_filename (f->vm_dir, "fsd.lock", NULL);
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (port);
        g_autoptr (GSocket) listener = NULL;
        g_autoptr (GuestEnd) guest = NULL;
        GThread *thread;
        int fd;

        listener = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, 0, &error);
        g_assert_true (g_socket_bind (listener, addr, TRUE, &error));
        g_assert_true (g_socket_listen (listener, &error));
        g_assert_true (
                corral_shares_add (f->vm_dir, f->folder, FS_MODE_RW, "notes", NULL, NULL, &error));

        /* the leaving server's lock */
        fd = open (lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        g_assert_cmpint (fd, >=, 0);
        g_assert_cmpint (flock (fd, LOCK_EX | LOCK_NB), ==, 0);
        thread = g_thread_new ("leaving-server", release_lock_later, GINT_TO_POINTER (fd));

        g_assert_true (corral_shares_ensure_server (f->vm_dir, &error));
        g_assert_no_error (error);
        g_thread_join (thread);
        guest = guest_accept (listener); /* the server that answered is this VM's */
        g_socket_close (guest->socket, NULL);
}

int
main (int argc, char **argv)
{
        g_test_init (&argc, &argv, NULL);
        g_test_add ("/shares/offline", Fixture, NULL, setup, test_offline, teardown);
        g_test_add ("/shares/online", Fixture, NULL, setup, test_online, teardown);
        g_test_add ("/shares/approved-delete", Fixture, NULL, setup, test_approved_delete,
                    teardown);
        g_test_add ("/shares/managed-policy", Fixture, NULL, setup, test_managed_policy, teardown);
        g_test_add ("/shares/managed-folders", Fixture, NULL, setup, test_managed_folders,
                    teardown);
        g_test_add ("/shares/wait-mounted", Fixture, NULL, setup, test_wait_mounted, teardown);
        g_test_add ("/shares/leaving-server", Fixture, NULL, setup, test_leaving_server, teardown);
        return g_test_run ();
}
