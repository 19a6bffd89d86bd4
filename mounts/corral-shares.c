/* corral-shares.c — see corral-shares.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-shares.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gi18n.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "corral-paths.h"
#include "corral-shm.h"
#include "corral-spawn.h"
#include "corral-policy.h"
#include "fs-own.h"
#include "fs-server.h"
#include "proto.h"

#define MAX_REPLY (1024 * 1024)

void
corral_share_free (CorralShare *share)
{
        if (!share)
                return;
        g_free (share->name);
        g_free (share->path);
        g_strfreev (share->protect);
        g_free (share);
}

const char *
corral_shares_fsd_path (void)
{
        return corral_paths_helper (CORRAL_HELPER_FSD);
}

static char *
vm_file (const char *vm_dir, const char *name)
{
        return g_build_filename (vm_dir, name, NULL);
}

/* The originals of what changed are the person's: they live next to the VM folders
 * (STATE/kept/NAME/), not in them, so removing the VM does not remove them. */
char *
corral_shares_kept_dir (const char *vm_dir)
{
        g_autofree char *vms = g_path_get_dirname (vm_dir);
        g_autofree char *state = g_path_get_dirname (vms);
        g_autofree char *name = g_path_get_basename (vm_dir);

        return g_build_filename (state, "kept", name, NULL);
}

GPtrArray *
corral_shares_changes (const char *vm_dir,
                       GHashTable **ret_folders,
                       gboolean *ret_complete,
                       GError **error)
{
        g_autofree char *keep = corral_shares_kept_dir (vm_dir);
        g_autoptr (GPtrArray) records = fs_journal_read (keep, error);

        if (!records)
                return NULL;
        if (ret_complete)
                *ret_complete = fs_journal_complete (records);
        if (ret_folders)
                *ret_folders = fs_journal_share_folders (records);
        return fs_journal_changes (records);
}

/* Control socket ------------------------------------------------------------------------------ */

static GSocketConnection *
control_connect (const char *vm_dir, GError **error)
{
        g_autofree char *path = vm_file (vm_dir, "fsd.sock");
        g_autoptr (GSocketAddress) addr = g_unix_socket_address_new (path);
        g_autoptr (GSocketClient) client = g_socket_client_new ();

        return g_socket_client_connect (client, G_SOCKET_CONNECTABLE (addr), NULL, error);
}

/* Sends one request, returns the parsed reply; an {"ok": false} reply becomes the error. */
static cJSON *
control_call (GSocketConnection *conn, cJSON *req, GError **error)
{
        GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (conn));
        g_autoptr (GDataInputStream) in =
                g_data_input_stream_new (g_io_stream_get_input_stream (G_IO_STREAM (conn)));
        g_autofree char *line = NULL;
        char *text = cJSON_PrintUnformatted (req);
        gboolean ok;
        gsize len = 0;
        cJSON *reply = NULL;
        cJSON *flag;
        const char *message = NULL;

        ok = g_output_stream_write_all (out, text, strlen (text), NULL, NULL, error) &&
             g_output_stream_write_all (out, "\n", 1, NULL, NULL, error);
        cJSON_free (text);
        if (!ok)
                return NULL;
        line = g_data_input_stream_read_line (in, &len, NULL, error);
        if (!line) {
                if (error && !*error)
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CLOSED,
                                             _ ("The file server closed the connection"));
                return NULL;
        }
        if (len > MAX_REPLY || proto_json_parse ((const uint8_t *) line, len, &reply) < 0) {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     _ ("The file server sent a malformed reply"));
                return NULL;
        }
        flag = cJSON_GetObjectItemCaseSensitive (reply, "ok");
        if (!cJSON_IsTrue (flag)) {
                proto_json_get_string (reply, "error", 4096, &message);
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                                     message ? message : _ ("The file server refused the request"));
                cJSON_Delete (reply);
                return NULL;
        }
        return reply;
}

/* Starting the server ------------------------------------------------------------------------- */

static gboolean
spawn_server (const char *vm_dir, GError **error)
{
        g_autofree char *port = vm_file (vm_dir, "fs.sock");
        g_autofree char *config = vm_file (vm_dir, "shares.json");
        g_autofree char *control = vm_file (vm_dir, "fsd.sock");
        g_autofree char *audit = vm_file (vm_dir, "audit.jsonl");
        g_autofree char *keep = corral_shares_kept_dir (vm_dir);
        g_autofree char *lock = vm_file (vm_dir, "fsd.lock");
        g_autofree char *log = vm_file (vm_dir, "fsd.log");
        g_autofree char *shm_name = corral_fs_shm_name (vm_dir);
        g_autofree char *shm = g_build_filename ("/dev/shm", shm_name, NULL);
        /* The VM's ivshmem file, when it has one: file contents then bypass the port. */
        gboolean with_shm = g_file_test (shm, G_FILE_TEST_IS_REGULAR);
        const char *policy = corral_policy_default_path ();
        g_autoptr (CorralPolicy) managed = NULL;
        /* --connect first: scripts find a VM's server by "corral-fsd --connect VM_DIR" */
        const char *argv[] = { corral_shares_fsd_path (),
                               "--connect",
                               port,
                               "--config",
                               config,
                               "--control",
                               control,
                               "--audit",
                               audit,
                               "--keep-dir",
                               keep,
                               "--lock",
                               lock,
                               "--policy",
                               policy,
                               with_shm ? "--shm" : NULL,
                               shm,
                               NULL };

        /* The server refuses a damaged policy too; read here, the caller gets the reason
         * instead of "see fsd.log". */
        if (!(managed = corral_policy_load (policy, error)) ||
            !corral_policy_check_version (managed, NULL, error))
                return FALSE;
        return corral_spawn_detached (vm_dir, argv, log, _ ("Cannot start the file server: %s"),
                                      error);
}

gboolean
corral_shares_ensure_server (const char *vm_dir, GError **error)
{
        g_autofree char *port = vm_file (vm_dir, "fs.sock");
        g_autoptr (GError) local = NULL;
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);

        if (conn)
                return TRUE;
        if (!g_file_test (port, G_FILE_TEST_EXISTS)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                             _ ("The VM is not running, or was created without shared folders"));
                return FALSE;
        }
        /* The server (or one that won the lock) answers within a moment. A server that is
         * leaving (its VM's port closed) has stopped answering but may hold the lock a while
         * longer, and the one started meanwhile leaves at once: start another each second. */
        for (int i = 0; i < 200; i++) {
                if (i % 40 == 0 && !spawn_server (vm_dir, error))
                        return FALSE;
                g_usleep (25 * 1000);
                g_clear_object (&conn);
                g_clear_error (&local);
                conn = control_connect (vm_dir, &local);
                if (conn)
                        return TRUE;
        }
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                     _ ("The file server did not start: see %s/fsd.log"), vm_dir);
        return FALSE;
}

/* Waiting for the guest's mount ----------------------------------------------------------------- */

#define MOUNT_POLL_US (20 * 1000)
/* A status reply takes milliseconds; one that hangs must not stretch the caller's timeout. */
#define STATUS_TIMEOUT_S 5
/* The server leaves when its port closes; a server that keeps leaving while the port exists
 * (see fsd.log) is not started forever. */
#define MAX_SERVER_STARTS 3

/* 1: the guest mounted the shares (or there are none), 0: not yet, -1: no answer (error set). */
static int
mount_status (const char *vm_dir, GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, error);
        const cJSON *list = NULL;
        cJSON *req, *reply;
        int r;

        if (!conn)
                return -1;
        g_socket_set_timeout (g_socket_connection_get_socket (conn), STATUS_TIMEOUT_S);
        req = cJSON_CreateObject ();
        cJSON_AddStringToObject (req, "op", "status");
        reply = control_call (conn, req, error);
        cJSON_Delete (req);
        if (!reply)
                return -1;
        if (proto_json_get_array (reply, "shares", 1024, &list) < 0) {
                /* Never read as "nothing shared": that would skip the wait. */
                cJSON_Delete (reply);
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     _ ("The file server sent a malformed reply"));
                return -1;
        }
        r = cJSON_GetArraySize (list) == 0 ||
            cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (reply, "connected"));
        cJSON_Delete (reply);
        return r;
}

/* Nothing to wait for: no server runs and shares.json lists nothing. */
static gboolean
nothing_shared (const char *vm_dir, GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);
        g_autoptr (GPtrArray) list = NULL;

        if (conn)
                return FALSE;
        list = corral_shares_list (vm_dir, error);
        return list && list->len == 0;
}

static gboolean
mount_timed_out (const char *vm_dir, guint timeout_ms, GError **error)
{
        g_autofree char *console = vm_file (vm_dir, "console.log");
        guint seconds = (timeout_ms + 999) / 1000;

        g_set_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                     ngettext ("The shared folders are not mounted in the VM: its file client did "
                               "not connect within %u second. The VM’s console log says why: %s",
                               "The shared folders are not mounted in the VM: its file client did "
                               "not connect within %u seconds. The VM’s console log says why: %s",
                               seconds),
                     seconds, console);
        return FALSE;
}

gboolean
corral_shares_wait_mounted (const char *vm_dir,
                            guint timeout_ms,
                            GCancellable *cancellable,
                            GError **error)
{
        gint64 deadline = g_get_monotonic_time () + (gint64) timeout_ms * 1000;
        g_autoptr (GError) local = NULL;
        guint starts = 0;

        g_return_val_if_fail (vm_dir != NULL, FALSE);

        if (nothing_shared (vm_dir, &local))
                return TRUE;
        if (local) {
                g_propagate_error (error, g_steal_pointer (&local));
                return FALSE;
        }
        for (;;) {
                int r = mount_status (vm_dir, &local);

                if (r > 0)
                        return TRUE;
                if (r < 0) {
                        /* No server (or it left: its VM's port closed, or it failed): a new
                         * one says HELLO again, and the client's answer to it is what counts. */
                        if (++starts > MAX_SERVER_STARTS) {
                                g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED,
                                             _ ("The file server stopped answering (see "
                                                "%s/fsd.log): %s"),
                                             vm_dir, local->message);
                                return FALSE;
                        }
                        if (!corral_shares_ensure_server (vm_dir, error))
                                return FALSE;
                        g_clear_error (&local);
                        continue;
                }
                if (g_cancellable_set_error_if_cancelled (cancellable, error))
                        return FALSE;
                if (g_get_monotonic_time () >= deadline)
                        return mount_timed_out (vm_dir, timeout_ms, error);
                g_usleep (MOUNT_POLL_US);
        }
}

static cJSON *
protect_to_json (const char *const *protect)
{
        cJSON *array = cJSON_CreateArray ();

        for (guint i = 0; protect && protect[i]; i++)
                cJSON_AddItemToArray (array, cJSON_CreateString (protect[i]));
        return array;
}

static char **
protect_from_json (const cJSON *obj)
{
        const cJSON *array = NULL, *item;
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();

        if (proto_json_get_array (obj, "protect", 64, &array) == 0) {
                cJSON_ArrayForEach (item, array) {
                        if (cJSON_IsString (item))
                                g_strv_builder_add (b, item->valuestring);
                }
        }
        return g_strv_builder_end (b);
}

/* Offline: shares.json through a scratch FsServer, which validates like the real one --------- */

static FsServer *
load_offline (const char *vm_dir, GError **error)
{
        g_autofree char *config = vm_file (vm_dir, "shares.json");
        g_autofree char *text = NULL;
        g_autoptr (FsServer) s = fs_server_new (NULL, NULL);
        g_autofree char *keep = corral_shares_kept_dir (vm_dir);
        const char *extra[] = { keep, vm_dir, NULL };
        g_auto (GStrv) own = fs_own_dirs (extra);
        gsize len = 0;

        /* The same folders the VM's corral-fsd never shares (F20), so the change it will
         * refuse is refused now, with the reason. */
        fs_server_set_own_dirs (s, (const char *const *) own);
        if (!g_file_get_contents (config, &text, &len, NULL))
                return g_steal_pointer (&s);
        /* A folder that is gone now is dropped from the list, as the server would. */
        if (!fs_server_load_shares_json (s, text, len, error)) {
                g_prefix_error (error, "%s: ", config);
                return NULL;
        }
        return g_steal_pointer (&s);
}

static gboolean
save_offline (const char *vm_dir, FsServer *s, GError **error)
{
        g_autofree char *config = vm_file (vm_dir, "shares.json");
        cJSON *root = fs_server_shares_to_json (s);
        char *text = cJSON_Print (root);
        gboolean ok;

        cJSON_Delete (root);
        ok = g_file_set_contents_full (config, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0600,
                                       error);
        cJSON_free (text);
        return ok;
}

/* Public API ---------------------------------------------------------------------------------- */

static GPtrArray *
shares_from_json (const cJSON *list)
{
        GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_share_free);
        const cJSON *item;

        cJSON_ArrayForEach (item, list) {
                const char *name = NULL, *path = NULL, *mode = NULL;
                CorralShare *share;
                FsMode m;

                if (proto_json_get_string (item, "name", 64, &name) < 0 ||
                    proto_json_get_string (item, "path", 4096, &path) < 0 ||
                    proto_json_get_string (item, "mode", 16, &mode) < 0 ||
                    !fs_mode_parse (mode, &m))
                        continue;
                share = g_new0 (CorralShare, 1);
                share->name = g_strdup (name);
                share->path = g_strdup (path);
                share->mode = m;
                share->protect = protect_from_json (item);
                g_ptr_array_add (out, share);
        }
        return out;
}

GPtrArray *
corral_shares_list (const char *vm_dir, GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);
        g_autoptr (FsServer) s = NULL;
        g_autoptr (GPtrArray) infos = NULL;
        GPtrArray *out;

        if (conn) {
                cJSON *req = cJSON_CreateObject (), *reply;
                const cJSON *list = NULL;

                cJSON_AddStringToObject (req, "op", "list");
                reply = control_call (conn, req, error);
                cJSON_Delete (req);
                if (!reply)
                        return NULL;
                proto_json_get_array (reply, "shares", 1024, &list);
                out = shares_from_json (list);
                cJSON_Delete (reply);
                return out;
        }
        s = load_offline (vm_dir, error);
        if (!s)
                return NULL;
        infos = fs_server_list_shares (s);
        out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_share_free);
        for (guint i = 0; i < infos->len; i++) {
                const FsShareInfo *info = infos->pdata[i];
                CorralShare *share = g_new0 (CorralShare, 1);
                share->name = g_strdup (info->name);
                share->path = g_strdup (info->path);
                share->mode = info->mode;
                share->protect = g_strdupv (info->protect);
                g_ptr_array_add (out, share);
        }
        return out;
}

/* One change, online or offline. */
static gboolean
change (const char *vm_dir,
        const char *op,
        const char *name,
        const char *path,
        FsMode mode,
        const char *const *protect,
        GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);
        g_autoptr (FsServer) s = NULL;
        g_autoptr (CorralPolicy) managed = NULL;
        gboolean ok;

        if (conn) {
                cJSON *req = cJSON_CreateObject (), *reply;

                cJSON_AddStringToObject (req, "op", op);
                if (name)
                        cJSON_AddStringToObject (req, "name", name);
                if (path)
                        cJSON_AddStringToObject (req, "path", path);
                cJSON_AddStringToObject (req, "mode", fs_mode_to_string (mode));
                if (protect)
                        cJSON_AddItemToObject (req, "protect", protect_to_json (protect));
                reply = control_call (conn, req, error);
                cJSON_Delete (req);
                cJSON_Delete (reply);
                return reply != NULL;
        }
        /* A share added or widened is checked against the organisation's policy as the server
         * would check it; removing one never is (it only narrows what the guest sees). */
        if (!g_str_equal (op, "remove") && !(managed = corral_policy_load_default (error)))
                return FALSE;
        s = load_offline (vm_dir, error);
        if (!s)
                return FALSE;
        fs_server_set_managed_policy (s, managed);
        if (g_str_equal (op, "add"))
                ok = fs_server_add_share (s, name, path, mode, protect, error);
        else if (g_str_equal (op, "remove"))
                ok = fs_server_remove_share (s, name, error);
        else
                ok = fs_server_set_mode (s, name, mode, error);
        return ok && save_offline (vm_dir, s, error);
}

gboolean
corral_shares_add (const char *vm_dir,
                   const char *path,
                   FsMode mode,
                   const char *name,
                   const char *const *protect,
                   char **ret_name,
                   GError **error)
{
        g_autofree char *abs = NULL, *chosen = NULL;

        if (!g_file_test (path, G_FILE_TEST_IS_DIR)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_DIRECTORY,
                             _ ("“%s” is not a folder"), path);
                return FALSE;
        }
        abs = g_canonicalize_filename (path, NULL);
        chosen = name ? g_strdup (name) : fs_share_name_for_path (abs);
        if (!change (vm_dir, "add", chosen, abs, mode, protect, error))
                return FALSE;
        if (ret_name)
                *ret_name = g_steal_pointer (&chosen);
        return TRUE;
}

gboolean
corral_shares_remove (const char *vm_dir, const char *name, GError **error)
{
        return change (vm_dir, "remove", name, NULL, FS_MODE_RO, NULL, error);
}

gboolean
corral_shares_set_mode (const char *vm_dir, const char *name, FsMode mode, GError **error)
{
        return change (vm_dir, "set-mode", name, NULL, mode, NULL, error);
}

gboolean
corral_shares_set_kept_space (const char *vm_dir, guint mib, GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);
        g_autoptr (FsServer) s = NULL;

        if (conn) {
                cJSON *req = cJSON_CreateObject (), *reply;

                cJSON_AddStringToObject (req, "op", "set-kept-space");
                cJSON_AddNumberToObject (req, "mib", mib);
                reply = control_call (conn, req, error);
                cJSON_Delete (req);
                cJSON_Delete (reply);
                return reply != NULL;
        }
        s = load_offline (vm_dir, error);
        return s && fs_server_set_kept_space (s, mib, error) && save_offline (vm_dir, s, error);
}

gboolean
corral_shares_kept_space (const char *vm_dir, guint64 *ret_used, guint64 *ret_space, GError **error)
{
        g_autofree char *keep = corral_shares_kept_dir (vm_dir);
        g_autofree char *config = vm_file (vm_dir, "shares.json");
        guint64 space = 0;

        /* The VM's choice; none once the VM is gone (its copies still count). */
        if (g_file_test (config, G_FILE_TEST_EXISTS)) {
                g_autoptr (FsServer) s = load_offline (vm_dir, error);

                if (!s)
                        return FALSE;
                space = (guint64) (fs_server_get_kept_space (s) ? fs_server_get_kept_space (s)
                                                                : FS_KEPT_SPACE_DEFAULT_MIB)
                        << 20;
        }
        if (ret_used)
                *ret_used = fs_keep_dir_usage (keep);
        if (ret_space)
                *ret_space = space;
        return TRUE;
}

void
corral_share_entry_free (CorralShareEntry *entry)
{
        if (!entry)
                return;
        g_free (entry->id);
        g_free (entry->folder);
        g_free (entry);
}

/* One approved-delete or stat request to the running server; the reply or NULL. */
static cJSON *
approved_call (const char *vm_dir,
               const char *op,
               const char *share,
               const char *path,
               const char *id,
               GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, error);
        cJSON *req, *reply;

        if (!conn)
                return NULL;
        req = cJSON_CreateObject ();
        cJSON_AddStringToObject (req, "op", op);
        cJSON_AddStringToObject (req, "name", share);
        cJSON_AddStringToObject (req, "path", path);
        if (id)
                cJSON_AddStringToObject (req, "id", id);
        reply = control_call (conn, req, error);
        cJSON_Delete (req);
        return reply;
}

static gboolean
entry_type_parse (const char *s, GFileType *ret)
{
        if (g_strcmp0 (s, "file") == 0)
                *ret = G_FILE_TYPE_REGULAR;
        else if (g_strcmp0 (s, "folder") == 0)
                *ret = G_FILE_TYPE_DIRECTORY;
        else if (g_strcmp0 (s, "link") == 0)
                *ret = G_FILE_TYPE_SYMBOLIC_LINK;
        else
                return FALSE;
        return TRUE;
}

CorralShareEntry *
corral_shares_approved_stat (const char *vm_dir,
                             const char *share,
                             const char *path,
                             GError **error)
{
        g_autoptr (CorralShareEntry) entry = g_new0 (CorralShareEntry, 1);
        const char *id = NULL, *type = NULL, *mode = NULL, *folder = NULL;
        int64_t size = 0;
        cJSON *reply;
        gboolean ok;

        g_return_val_if_fail (vm_dir != NULL && share != NULL && path != NULL, NULL);

        reply = approved_call (vm_dir, "stat", share, path, NULL, error);
        if (!reply)
                return NULL;
        ok = proto_json_get_string (reply, "id", 128, &id) == 0 &&
             proto_json_get_string (reply, "type", 16, &type) == 0 &&
             proto_json_get_string (reply, "mode", 16, &mode) == 0 &&
             proto_json_get_string (reply, "folder", 4096, &folder) == 0 &&
             proto_json_get_int (reply, "size", 0, G_MAXINT64, &size) == 0 &&
             entry_type_parse (type, &entry->type) && fs_mode_parse (mode, &entry->mode);
        if (ok) {
                entry->id = g_strdup (id);
                entry->folder = g_strdup (folder);
                entry->size = (guint64) size;
        } else {
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     _ ("The file server sent a malformed reply"));
        }
        cJSON_Delete (reply);
        return ok ? g_steal_pointer (&entry) : NULL;
}

gboolean
corral_shares_approved_delete (
        const char *vm_dir, const char *share, const char *path, const char *id, GError **error)
{
        cJSON *reply;

        g_return_val_if_fail (vm_dir != NULL && share != NULL && path != NULL && id != NULL, FALSE);

        reply = approved_call (vm_dir, "approved-delete", share, path, id, error);
        cJSON_Delete (reply);
        return reply != NULL;
}

/* Undo and keep ------------------------------------------------------------------------------ */

/* With no file server running: one made for the purpose, serving the folders the journal names
 * (the VM may be gone), while holding the VM's server lock so that none starts meanwhile. */
typedef struct {
        FsServer *server;
        int lock_fd;
} Offline;

static void
offline_clear (Offline *o)
{
        g_clear_pointer (&o->server, fs_server_free);
        if (o->lock_fd >= 0)
                close (o->lock_fd); /* drops the lock */
        o->lock_fd = -1;
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Offline, offline_clear)

static gboolean
offline_open (const char *vm_dir, Offline *o, GError **error)
{
        g_autofree char *keep = corral_shares_kept_dir (vm_dir);
        g_autofree char *lock = vm_file (vm_dir, "fsd.lock");
        g_autoptr (GPtrArray) records = NULL;
        g_autoptr (GHashTable) folders = NULL;
        GHashTableIter iter;
        gpointer name, folder;

        o->lock_fd = -1;
        if (g_file_test (vm_dir, G_FILE_TEST_IS_DIR)) {
                o->lock_fd = open (lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (o->lock_fd < 0 || flock (o->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_BUSY,
                                             _ ("The VM’s file server is starting or stopping; "
                                                "try again in a moment"));
                        return FALSE;
                }
        }
        if (!(records = fs_journal_read (keep, error)))
                return FALSE;
        o->server = fs_server_new (keep, NULL);
        folders = fs_journal_share_folders (records);
        g_hash_table_iter_init (&iter, folders);
        while (g_hash_table_iter_next (&iter, &name, &folder)) {
                g_autoptr (GError) local = NULL;
                /* Undo acts for the person: the share's mode does not limit it. */
                if (!fs_server_add_share (o->server, name, folder, FS_MODE_RW, NULL, &local))
                        g_warning ("%s: %s", (char *) folder, local->message);
        }
        return TRUE;
}

static GPtrArray *
outcomes_from_json (const cJSON *list, GError **error)
{
        g_autoptr (GPtrArray) out =
                g_ptr_array_new_with_free_func ((GDestroyNotify) fs_undo_outcome_free);
        const cJSON *item;

        cJSON_ArrayForEach (item, list) {
                const char *share = NULL, *path = NULL, *problem = NULL;
                FsUndoOutcome *o;

                if (proto_json_get_string (item, "share", 255, &share) < 0 ||
                    proto_json_get_string (item, "path", 4096, &path) < 0) {
                        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                             _ ("The file server sent a malformed reply"));
                        return NULL;
                }
                proto_json_get_string (item, "problem", 4096, &problem);
                o = g_new0 (FsUndoOutcome, 1);
                o->share = g_strdup (share);
                o->path = g_strdup (path);
                o->problem = g_strdup (problem);
                o->changed_since =
                        cJSON_IsTrue (cJSON_GetObjectItemCaseSensitive (item, "changed_since"));
                g_ptr_array_add (out, o);
        }
        return g_steal_pointer (&out);
}

GPtrArray *
corral_shares_undo (const char *vm_dir, const char *const *which, gboolean force, GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);
        g_auto (Offline) offline = { .lock_fd = -1 };

        if (conn) {
                cJSON *req = cJSON_CreateObject (), *reply;
                const cJSON *list = NULL;
                GPtrArray *out;

                cJSON_AddStringToObject (req, "op", "undo");
                if (which) {
                        cJSON *paths = cJSON_AddArrayToObject (req, "paths");
                        for (guint i = 0; which[i]; i++)
                                cJSON_AddItemToArray (paths, cJSON_CreateString (which[i]));
                }
                cJSON_AddBoolToObject (req, "force", force);
                reply = control_call (conn, req, error);
                cJSON_Delete (req);
                if (!reply)
                        return NULL;
                proto_json_get_array (reply, "outcomes", 1000000, &list);
                out = outcomes_from_json (list, error);
                cJSON_Delete (reply);
                return out;
        }
        if (!offline_open (vm_dir, &offline, error))
                return NULL;
        return fs_server_undo (offline.server, which, force, error);
}

gboolean
corral_shares_keep_all (const char *vm_dir, GError **error)
{
        g_autoptr (GSocketConnection) conn = control_connect (vm_dir, NULL);
        g_auto (Offline) offline = { .lock_fd = -1 };

        if (conn) {
                cJSON *req = cJSON_CreateObject (), *reply;

                cJSON_AddStringToObject (req, "op", "keep-all");
                reply = control_call (conn, req, error);
                cJSON_Delete (req);
                cJSON_Delete (reply);
                return reply != NULL;
        }
        return offline_open (vm_dir, &offline, error) && fs_server_keep_all (offline.server, error);
}
