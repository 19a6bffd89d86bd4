/* fs-approved.c — what the person approved that the share's mode refuses to the guest: deleting
 * a file, a link or an empty folder. The host does exactly that one thing, resolved like any
 * guest request (beneath the root, no link followed, protected paths and special files still
 * refused), keeps a copy of a file first, and records it.
 *
 * The person is asked about one entry, not one name: when the question is put, the app asks
 * here which entry the path names (its identity: device, inode and birth time), and the delete
 * goes ahead only if the path still names that entry. Between the question and the answer the
 * guest may rename another file onto the path; that file stays.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-resolve.h"

#define FS_RULE_APPROVED "approved-by-person"

/* A relative path of non-empty components, none "." or "..". */
static gboolean
path_valid (const char *path)
{
        g_auto (GStrv) parts = NULL;

        if (!path[0] || path[0] == '/' || strlen (path) >= FS_MAX_PATH ||
            !g_utf8_validate (path, -1, NULL))
                return FALSE;
        parts = g_strsplit (path, "/", -1);
        if (g_strv_length (parts) > FS_MAX_DEPTH)
                return FALSE;
        for (char **p = parts; *p; p++)
                if (!(*p)[0] || g_str_equal (*p, ".") || g_str_equal (*p, ".."))
                        return FALSE;
        return TRUE;
}

/* The guest's node for path, if it looked it up: it is gone now (ESTALE from here on). */
static void
detach_node (FsServer *s, FsShare *share, const char *path)
{
        g_auto (GStrv) parts = g_strsplit (path, "/", -1);
        FsNode *node = share->root_node;

        for (char **p = parts; *p && node; p++)
                node = fs_node_find_child (node, *p, strlen (*p));
        if (node)
                fs_node_detach (s, node);
}

static gboolean refuse (GError **error, const char *format, ...) G_GNUC_PRINTF (2, 3);

static gboolean
refuse (GError **error, const char *format, ...)
{
        g_autofree char *message = NULL;
        va_list ap;

        va_start (ap, format);
        message = g_strdup_vprintf (format, ap);
        va_end (ap);
        g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED, message);
        return FALSE;
}

static gboolean
errno_error (GError **error, int errnum, const char *path)
{
        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errnum), _ ("“%s”: %s"), path,
                     g_strerror (errnum));
        return FALSE;
}

/* The share, and an fd of the folder holding path's last component, resolved beneath the root
 * like a guest request, after the checks no approval overrides. */
static gboolean
resolve (FsServer *s,
         const char *share_name,
         const char *path,
         FsShare **ret_share,
         int *ret_dirfd,
         char **ret_name,
         GError **error)
{
        FsShare *share = fs_server_find_share (s, share_name, strlen (share_name));
        g_autofree char *parent = NULL;
        int r;

        if (!share || share->removed) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("No shared folder named “%s”"), share_name);
                return FALSE;
        }
        if (!path_valid (path)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not a path inside the shared folder"), path);
                return FALSE;
        }
        /* Approval does not reach what no mode may change (protected, hidden, git's). */
        {
                FsCtx check = { .s = s };
                r = fs_check_change_at (&check, share, path, FS_CHANGE_REMOVE, 0);
                g_free (check.detail);
                if (r < 0 && check.rule)
                        return refuse (error,
                                       _ ("“%s” is a protected path; Corral never deletes it"),
                                       path);
        }
        parent = g_path_get_dirname (path);
        r = fs_resolve_open (share->root_fd, share->dev, g_str_equal (parent, ".") ? "" : parent,
                             O_PATH | O_DIRECTORY, 0, ret_dirfd);
        if (r < 0)
                return errno_error (error, -r, path);
        *ret_share = share;
        *ret_name = g_path_get_basename (path);
        return TRUE;
}

/* What name in dirfd is, if it is something an approval may delete: its identity and stat. */
static gboolean
identify (int dirfd,
          const char *name,
          const char *path,
          char **ret_id,
          struct stat *ret_st,
          GError **error)
{
        struct stat st;
        char *id;

        if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno_error (error, errno, path);
        if (S_ISREG (st.st_mode) && st.st_nlink > 1)
                return refuse (error, _ ("“%s” has another name outside the share; it stays"),
                               path);
        if (!S_ISREG (st.st_mode) && !S_ISLNK (st.st_mode) && !S_ISDIR (st.st_mode))
                return refuse (error, _ ("“%s” is not a file or folder; it stays"), path);
        if (!(id = fs_created_key_at (dirfd, name)))
                return errno_error (error, errno, path);
        *ret_id = id;
        *ret_st = st;
        return TRUE;
}

gboolean
fs_server_approved_stat (FsServer *s,
                         const char *share_name,
                         const char *path,
                         char **ret_id,
                         struct stat *ret_st,
                         GError **error)
{
        FsShare *share;
        g_autofree char *name = NULL, *id = NULL;
        g_autofd int dirfd = -1;
        struct stat st;

        g_return_val_if_fail (s != NULL && share_name != NULL && path != NULL, FALSE);

        if (!resolve (s, share_name, path, &share, &dirfd, &name, error) ||
            !identify (dirfd, name, path, &id, &st, error))
                return FALSE;
        if (ret_id)
                *ret_id = g_steal_pointer (&id);
        if (ret_st)
                *ret_st = st;
        return TRUE;
}

cJSON *
fs_server_approved_stat_json (FsServer *s, const char *share_name, const char *path, GError **error)
{
        g_autofree char *id = NULL;
        FsShare *share;
        struct stat st;
        cJSON *reply;

        if (!fs_server_approved_stat (s, share_name, path, &id, &st, error))
                return NULL;
        share = fs_server_find_share (s, share_name, strlen (share_name));
        reply = cJSON_CreateObject ();
        cJSON_AddBoolToObject (reply, "ok", 1);
        cJSON_AddStringToObject (reply, "id", id);
        cJSON_AddStringToObject (reply, "type",
                                 S_ISDIR (st.st_mode)   ? "folder"
                                 : S_ISLNK (st.st_mode) ? "link"
                                                        : "file");
        cJSON_AddNumberToObject (reply, "size", (double) st.st_size);
        cJSON_AddStringToObject (reply, "mode", fs_mode_to_string (share->mode));
        cJSON_AddStringToObject (reply, "folder", share->host_path);
        return reply;
}

/* Removes name in dirfd, the entry whose identity is expected_id; returns the audit op or NULL
 * with error set. */
static const char *
remove_entry (FsServer *s,
              FsShare *share,
              int dirfd,
              const char *name,
              const char *path,
              const char *expected_id,
              GError **error)
{
        g_autofree char *id = NULL;
        struct stat st;
        int r;

        if (!identify (dirfd, name, path, &id, &st, error))
                return NULL;
        if (!g_str_equal (id, expected_id)) {
                FsAuditRecord rec = { .share = share->name,
                                      .op = S_ISDIR (st.st_mode) ? "rmdir" : "unlink",
                                      .path = path,
                                      .result = "refused",
                                      .rule = FS_RULE_APPROVED,
                                      .errnum = EPERM,
                                      .message = "not deleted: another file is at this path "
                                                 "than the one the person was asked about",
                                      .size = -1 };
                fs_audit_write (s->audit, &rec);
                refuse (error,
                        _ ("“%s” is no longer the file the person was asked about (it was "
                           "replaced or moved since); nothing was deleted"),
                        path);
                return NULL;
        }
        if (S_ISREG (st.st_mode) && (r = fs_keep_copy (s, share, dirfd, name, path)) < 0) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (-r),
                             _ ("Could not keep a copy of “%s” (%s), so it was not deleted"), path,
                             g_strerror (-r));
                return NULL;
        }
        if (unlinkat (dirfd, name, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0) < 0) {
                errno_error (error, errno, path);
                return NULL;
        }
        fs_keep_note (s, FS_JOURNAL_DELETE, share, path, NULL, &st, NULL, false);
        return S_ISDIR (st.st_mode) ? "rmdir" : "unlink";
}

gboolean
fs_server_approved_delete (FsServer *s,
                           const char *share_name,
                           const char *path,
                           const char *expected_id,
                           GError **error)
{
        FsShare *share;
        g_autofree char *name = NULL;
        g_autofd int dirfd = -1;
        const char *op;

        g_return_val_if_fail (s != NULL && share_name != NULL && path != NULL, FALSE);
        g_return_val_if_fail (expected_id != NULL, FALSE);

        if (!resolve (s, share_name, path, &share, &dirfd, &name, error))
                return FALSE;
        op = remove_entry (s, share, dirfd, name, path, expected_id, error);
        if (!op)
                return FALSE;
        detach_node (s, share, path);
        {
                FsAuditRecord rec = { .share = share->name,
                                      .op = op,
                                      .path = path,
                                      .result = "ok",
                                      .rule = FS_RULE_APPROVED,
                                      .message = "deleted by the host after the person approved",
                                      .size = -1 };
                fs_audit_write (s->audit, &rec);
        }
        return TRUE;
}
