/* fs-server.c — shares, nodes, handles and the request dispatcher (ops are in fs-ops.c).
 *
 * Nodes are the server's own: a node is (parent node, name) inside one share, found again by
 * walking to the share root and opening the joined components beneath the share's root fd
 * (fs-resolve.c). The guest only ever names a node id and one validated component.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-server-private.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gi18n.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-glib-compat.h"
#include "fs-own.h"
#include "fs-resolve.h"

#define DEFAULT_MAX_HANDLES 4096
#define DEFAULT_MAX_NODES (1u << 20)

/* Shares -------------------------------------------------------------------------------------- */

FsShare *
fs_share_ref (FsShare *share)
{
        g_atomic_int_inc (&share->refs);
        return share;
}

void
fs_share_unref (FsShare *share)
{
        if (!share || !g_atomic_int_dec_and_test (&share->refs))
                return;
        if (share->root_fd >= 0)
                close (share->root_fd);
        fs_path_rules_free (share->paths);
        g_strfreev (share->extra);
        g_hash_table_unref (share->created);
        g_free (share->name);
        g_free (share->host_path);
        g_free (share);
}

bool
fs_share_name_valid (const char *name)
{
        size_t len;

        if (!name || !g_utf8_validate (name, -1, NULL))
                return false;
        len = strlen (name);
        if (len == 0 || len > 64 || name[0] == '.' || name[0] == ' ' || name[len - 1] == ' ')
                return false;
        for (const char *p = name; *p; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                if (!g_unichar_isalnum (c) && c != '.' && c != '-' && c != '_' && c != ' ')
                        return false;
        }
        return true;
}

char *
fs_share_name_for_path (const char *path)
{
        g_autofree char *base = g_path_get_basename (path);
        g_autofree char *valid = g_utf8_make_valid (base, -1);
        GString *out = g_string_new (NULL);

        for (const char *p = valid; *p && out->len < 60; p = g_utf8_next_char (p)) {
                gunichar c = g_utf8_get_char (p);
                if (g_unichar_isalnum (c) || c == '-' || c == '_' || c == ' ' ||
                    (c == '.' && out->len > 0))
                        g_string_append_unichar (out, c);
                else if (out->len > 0)
                        g_string_append_c (out, '_');
        }
        while (out->len > 0 && out->str[out->len - 1] == ' ')
                g_string_truncate (out, out->len - 1);
        if (out->len == 0)
                g_string_assign (out, "shared");
        return g_string_free (out, FALSE);
}

FsShare *
fs_server_find_share (FsServer *s, const char *name, size_t len)
{
        g_autofree char *key = g_strndup (name, len);
        return g_hash_table_lookup (s->shares, key);
}

void
fs_server_notify_entry (FsServer *s, uint64_t parent, const char *name)
{
        uint8_t buf[8 + 4 + 2 + 256];
        FsWriter w;

        if (!s->notify)
                return;
        fs_writer_init (&w, buf, sizeof buf);
        fs_write_u32 (&w, FS_NOTIFY_INVAL_ENTRY);
        fs_write_u64 (&w, parent);
        fs_write_str (&w, name, strlen (name));
        if (!w.overflow)
                s->notify (buf, w.len, s->notify_data);
}

static void
notify_root_entry (FsServer *s, const char *name)
{
        fs_server_notify_entry (s, FS_ROOT_NODE, name);
}

/* The organisation's policy on the folder open as fd: where it really is, links resolved (the
 * policy names folders, and a link to a forbidden folder is that folder). */
static gboolean
managed_allows (FsServer *s, int fd, FsMode mode, GError **error)
{
        g_autofree char *proc = NULL, *where = NULL;

        if (!s->managed)
                return TRUE;
        proc = g_strdup_printf ("/proc/self/fd/%d", fd);
        where = g_file_read_link (proc, error);
        if (!where)
                return FALSE;
        return corral_policy_check_share (s->managed, where, mode, NULL, error);
}

gboolean
fs_server_add_share (FsServer *s,
                     const char *name,
                     const char *path,
                     FsMode mode,
                     const char *const *extra_protected,
                     GError **error)
{
        g_autoptr (FsPathRules) paths = NULL;
        g_autofd int fd = -1;
        struct stat st;
        FsShare *share;

        if (!fs_share_name_valid (name)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” cannot be a shared folder name: use letters, digits, spaces, "
                                "“.”, “-” or “_”, at most 64 bytes, not starting with “.”"),
                             name);
                return FALSE;
        }
        if (g_hash_table_contains (s->shares, name)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                             _ ("A shared folder named “%s” already exists; choose another name"),
                             name);
                return FALSE;
        }
        if (!g_path_is_absolute (path)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                             _ ("“%s” is not an absolute path"), path);
                return FALSE;
        }
        {
                g_autoptr (GStrvBuilder) all = g_strv_builder_new ();
                g_auto (GStrv) patterns = NULL;

                if (s->policy_protected)
                        g_strv_builder_addv (all, (const char **) s->policy_protected);
                if (extra_protected)
                        g_strv_builder_addv (all, (const char **) extra_protected);
                patterns = g_strv_builder_end (all);
                paths = fs_path_rules_new ((const char *const *) patterns,
                                           (const char *const *) s->policy_hidden, error);
                if (!paths)
                        return FALSE;
        }

        /* The person chose this folder: following symlinks to it is fine here; from now on
         * the fd is the share, wherever the folder is moved. */
        fd = open (path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat (fd, &st) < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Cannot share “%s”: %s"), path, g_strerror (errsv));
                return FALSE;
        }

        if (!managed_allows (s, fd, mode, error))
                return FALSE;
        if (fs_own_ids_enclose (s->own_dirs, fd)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED,
                             _ ("“%s” holds Corral's own files (its settings, virtual machines "
                                "or the keychain) and cannot be shared: the assistant could "
                                "change its own permissions there. Choose another folder."),
                             path);
                return FALSE;
        }

        share = g_new0 (FsShare, 1);
        share->refs = 1;
        share->name = g_strdup (name);
        share->host_path = g_strdup (path);
        share->root_fd = g_steal_fd (&fd);
        share->dev = st.st_dev;
        share->ino = st.st_ino;
        share->mode = mode;
        share->paths = g_steal_pointer (&paths);
        share->extra = extra_protected ? g_strdupv ((char **) extra_protected) : g_new0 (char *, 1);
        share->created = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        g_hash_table_insert (s->shares, share->name, share);
        notify_root_entry (s, name);
        return TRUE;
}

static FsShare *
share_or_error (FsServer *s, const char *name, GError **error)
{
        FsShare *share = g_hash_table_lookup (s->shares, name);

        if (!share)
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                             _ ("There is no shared folder named “%s”"), name);
        return share;
}

gboolean
fs_server_remove_share (FsServer *s, const char *name, GError **error)
{
        FsShare *share = share_or_error (s, name, error);
        g_autofree char *key = NULL;

        if (!share)
                return FALSE;
        /* Nodes and handles keep their reference but see `removed` on their next request. */
        share->removed = true;
        if (share->root_node && !share->root_node->detached)
                share->root_node->detached = true;
        key = g_strdup (name);
        g_hash_table_remove (s->shares, key);
        notify_root_entry (s, key);
        return TRUE;
}

gboolean
fs_server_set_mode (FsServer *s, const char *name, FsMode mode, GError **error)
{
        FsShare *share = share_or_error (s, name, error);

        if (!share || !managed_allows (s, share->root_fd, mode, error))
                return FALSE;
        share->mode = mode;
        notify_root_entry (s, name);
        return TRUE;
}

void
fs_share_info_free (FsShareInfo *info)
{
        if (!info)
                return;
        g_free (info->name);
        g_free (info->path);
        g_strfreev (info->protect);
        g_free (info);
}

static int
compare_info (gconstpointer a, gconstpointer b)
{
        const FsShareInfo *x = *(FsShareInfo *const *) a, *y = *(FsShareInfo *const *) b;
        return strcmp (x->name, y->name);
}

GPtrArray *
fs_server_list_shares (FsServer *s)
{
        GPtrArray *list = g_ptr_array_new_with_free_func ((GDestroyNotify) fs_share_info_free);
        GHashTableIter iter;
        FsShare *share;

        g_hash_table_iter_init (&iter, s->shares);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &share)) {
                FsShareInfo *info = g_new0 (FsShareInfo, 1);
                info->name = g_strdup (share->name);
                info->path = g_strdup (share->host_path);
                info->mode = share->mode;
                info->protect = g_strdupv (share->extra);
                g_ptr_array_add (list, info);
        }
        g_ptr_array_sort (list, compare_info);
        return list;
}

cJSON *
fs_server_shares_to_json (FsServer *s)
{
        g_autoptr (GPtrArray) shares = fs_server_list_shares (s);
        cJSON *root = cJSON_CreateObject ();
        cJSON *list = cJSON_AddArrayToObject (root, "shares");

        for (guint i = 0; i < shares->len; i++) {
                const FsShareInfo *info = shares->pdata[i];
                cJSON *o = cJSON_CreateObject ();

                cJSON_AddStringToObject (o, "name", info->name);
                cJSON_AddStringToObject (o, "path", info->path);
                cJSON_AddStringToObject (o, "mode", fs_mode_to_string (info->mode));
                if (info->protect[0]) {
                        cJSON *array = cJSON_AddArrayToObject (o, "protect");
                        for (guint k = 0; info->protect[k]; k++)
                                cJSON_AddItemToArray (array, cJSON_CreateString (info->protect[k]));
                }
                cJSON_AddItemToArray (list, o);
        }
        if (fs_server_get_kept_space (s))
                cJSON_AddNumberToObject (root, "kept_space_mib", fs_server_get_kept_space (s));
        return root;
}

/* A share's own protected patterns: at most 64 strings. */
static gboolean
read_protect (const cJSON *obj, GStrv *ret)
{
        const cJSON *array = NULL, *item;
        g_autoptr (GStrvBuilder) b = g_strv_builder_new ();
        int r = proto_json_get_array (obj, "protect", 64, &array);

        if (r == -EINVAL)
                return FALSE;
        if (r == 0) {
                cJSON_ArrayForEach (item, array) {
                        if (!cJSON_IsString (item) || strlen (item->valuestring) > 256)
                                return FALSE;
                        g_strv_builder_add (b, item->valuestring);
                }
        }
        *ret = g_strv_builder_end (b);
        return TRUE;
}

gboolean
fs_server_load_shares_json (FsServer *s, const char *text, size_t len, GError **error)
{
        cJSON *root = NULL;
        const cJSON *list = NULL, *item, *space;

        if (proto_json_parse ((const uint8_t *) text, len, &root) < 0 ||
            proto_json_get_array (root, "shares", 1024, &list) < 0) {
                cJSON_Delete (root);
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     _ ("not a valid shared-folder list"));
                return FALSE;
        }
        space = cJSON_GetObjectItemCaseSensitive (root, "kept_space_mib");
        if (space && !fs_server_set_kept_space_json (s, space, error)) {
                cJSON_Delete (root);
                g_clear_error (error);
                g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                                     _ ("“kept_space_mib” is not a number of MiB in range"));
                return FALSE;
        }
        cJSON_ArrayForEach (item, list) {
                const char *name = NULL, *path = NULL, *mode_text = NULL;
                g_auto (GStrv) protect = NULL;
                g_autoptr (GError) local = NULL;
                FsMode mode;

                if (!cJSON_IsObject (item) || proto_json_get_string (item, "name", 64, &name) < 0 ||
                    proto_json_get_string (item, "path", 4096, &path) < 0 ||
                    proto_json_get_string (item, "mode", 16, &mode_text) < 0 ||
                    !fs_mode_parse (mode_text, &mode) || !read_protect (item, &protect)) {
                        g_warning ("Skipping a malformed shared-folder entry");
                        continue;
                }
                if (!fs_server_add_share (s, name, path, mode, (const char *const *) protect,
                                          &local))
                        g_message ("Not sharing %s: %s", path, local->message);
        }
        cJSON_Delete (root);
        return TRUE;
}

/* Created-in-this-session marks ------------------------------------------------------------- */

static char *
created_key (const struct statx *stx)
{
        return g_strdup_printf ("%u:%u:%" G_GUINT64_FORMAT ":%" G_GINT64_FORMAT ".%u",
                                stx->stx_dev_major, stx->stx_dev_minor, (guint64) stx->stx_ino,
                                (stx->stx_mask & STATX_BTIME) ? (gint64) stx->stx_btime.tv_sec : 0,
                                (stx->stx_mask & STATX_BTIME) ? stx->stx_btime.tv_nsec : 0);
}

char *
fs_created_key_at (int dirfd, const char *name)
{
        struct statx stx;
        int flags = AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH);

        if (statx (dirfd, name, flags, STATX_INO | STATX_BTIME, &stx) < 0)
                return NULL;
        return created_key (&stx);
}

void
fs_share_mark_created (FsShare *share, int fd)
{
        char *key = fs_created_key_at (fd, "");

        if (key && g_hash_table_size (share->created) < DEFAULT_MAX_NODES)
                g_hash_table_add (share->created, key);
        else
                g_free (key);
}

bool
fs_share_is_created (FsShare *share, int fd)
{
        g_autofree char *key = fs_created_key_at (fd, "");
        return key && g_hash_table_contains (share->created, key);
}

/* Nodes --------------------------------------------------------------------------------------- */

static void
node_free_now (FsServer *s, FsNode *node)
{
        if (node->children)
                g_hash_table_unref (node->children);
        if (node->is_share_root && node->share->root_node == node)
                node->share->root_node = NULL;
        fs_share_unref (node->share);
        g_free (node->name);
        g_hash_table_remove (s->nodes, &node->id); /* frees node */
}

/* Frees node (and then its parent, and so on) once nothing refers to it. */
static void
node_maybe_free (FsServer *s, FsNode *node)
{
        while (node && node->nlookup == 0 && node->nholds == 0 && node->n_children == 0) {
                FsNode *parent = node->parent;

                if (parent) {
                        g_hash_table_remove (parent->children, node->name);
                        parent->n_children--;
                }
                node_free_now (s, node);
                node = parent;
        }
}

static FsNode *
node_new (FsServer *s, FsShare *share, FsNode *parent, const char *name, size_t len, int *ret_err)
{
        FsNode *node;

        if (g_hash_table_size (s->nodes) >= s->max_nodes) {
                *ret_err = -ENFILE;
                return NULL;
        }
        node = g_new0 (FsNode, 1);
        node->id = s->next_node++;
        node->share = fs_share_ref (share);
        node->name = g_strndup (name, len);
        node->cached_mtime_s = -1;
        if (parent) {
                node->parent = parent;
                if (!parent->children)
                        parent->children = g_hash_table_new (g_str_hash, g_str_equal);
                g_hash_table_insert (parent->children, node->name, node);
                parent->n_children++;
        }
        g_hash_table_insert (s->nodes, &node->id, node);
        return node;
}

FsNode *
fs_node_get (FsServer *s, uint64_t id, int *ret_err)
{
        FsNode *node = g_hash_table_lookup (s->nodes, &id);

        if (!node || node->detached || node->share->removed) {
                *ret_err = -ESTALE;
                return NULL;
        }
        return node;
}

FsNode *
fs_node_find_child (FsNode *parent, const char *name, size_t len)
{
        char key[FS_MAX_NAME + 1];

        if (!parent->children || len > FS_MAX_NAME)
                return NULL;
        memcpy (key, name, len);
        key[len] = '\0';
        return g_hash_table_lookup (parent->children, key);
}

FsNode *
fs_node_child (FsServer *s, FsNode *parent, const char *name, size_t len, int *ret_err)
{
        FsNode *node = fs_node_find_child (parent, name, len);

        if (node)
                return node;
        return node_new (s, parent->share, parent, name, len, ret_err);
}

FsNode *
fs_share_root_node (FsServer *s, FsShare *share, int *ret_err)
{
        FsNode *node;

        if (share->root_node)
                return share->root_node;
        node = node_new (s, share, NULL, share->name, strlen (share->name), ret_err);
        if (!node)
                return NULL;
        node->is_share_root = true;
        share->root_node = node;
        return node;
}

void
fs_node_ref_lookup (FsNode *node)
{
        node->nlookup++;
}

void
fs_node_forget (FsServer *s, FsNode *node, uint64_t n)
{
        node->nlookup = n >= node->nlookup ? 0 : node->nlookup - n;
        node_maybe_free (s, node);
}

void
fs_node_hold (FsNode *node)
{
        node->nholds++;
}

void
fs_node_release (FsServer *s, FsNode *node)
{
        g_return_if_fail (node->nholds > 0);
        node->nholds--;
        node_maybe_free (s, node);
}

static void
node_unlink_from_parent (FsServer *s, FsNode *node)
{
        FsNode *parent = node->parent;

        if (!parent)
                return;
        g_hash_table_remove (parent->children, node->name);
        parent->n_children--;
        node->parent = NULL;
        node_maybe_free (s, parent);
}

void
fs_node_detach (FsServer *s, FsNode *node)
{
        node->detached = true;
        node_unlink_from_parent (s, node);
        node_maybe_free (s, node);
}

void
fs_node_move (FsServer *s, FsNode *node, FsNode *new_parent, const char *name, size_t len)
{
        /* Take the new parent's reference first so that unlinking from the old one cannot
         * free the new parent when they are related. */
        new_parent->n_children++;
        node_unlink_from_parent (s, node);
        new_parent->n_children--;

        g_free (node->name);
        node->name = g_strndup (name, len);
        node->parent = new_parent;
        if (!new_parent->children)
                new_parent->children = g_hash_table_new (g_str_hash, g_str_equal);
        g_hash_table_insert (new_parent->children, node->name, node);
        new_parent->n_children++;
}

int
fs_node_path (FsNode *node, char *buf, size_t size)
{
        const FsNode *chain[FS_MAX_DEPTH];
        guint depth = 0;
        size_t len = 0;

        for (const FsNode *n = node; !n->is_share_root; n = n->parent) {
                if (n->detached || !n->parent)
                        return -ESTALE;
                if (depth == FS_MAX_DEPTH)
                        return -ENAMETOOLONG;
                chain[depth++] = n;
        }
        if (node->detached || node->share->removed)
                return -ESTALE;

        buf[0] = '\0';
        while (depth > 0) {
                const FsNode *n = chain[--depth];
                size_t l = strlen (n->name);

                if (len + l + 2 > size)
                        return -ENAMETOOLONG;
                if (len > 0)
                        buf[len++] = '/';
                memcpy (buf + len, n->name, l);
                len += l;
                buf[len] = '\0';
        }
        return 0;
}

/* Handles ------------------------------------------------------------------------------------- */

FsHandle *
fs_handle_new (FsServer *s, FsNode *node, int fd, int *ret_err)
{
        FsHandle *h;

        if (g_hash_table_size (s->handles) >= s->max_handles) {
                *ret_err = -EMFILE;
                return NULL;
        }
        h = g_new0 (FsHandle, 1);
        h->id = s->next_handle++;
        h->fd = fd;
        h->node = node;
        if (node) {
                fs_node_hold (node);
                h->share = fs_share_ref (node->share);
        }
        g_hash_table_insert (s->handles, &h->id, h);
        return h;
}

bool
fs_server_handles_full (FsServer *s)
{
        return g_hash_table_size (s->handles) >= s->max_handles;
}

bool
fs_server_nodes_full (FsServer *s)
{
        return g_hash_table_size (s->nodes) >= s->max_nodes;
}

FsHandle *
fs_handle_get (FsServer *s, uint64_t id, int *ret_err)
{
        FsHandle *h = g_hash_table_lookup (s->handles, &id);

        if (!h) {
                *ret_err = -EBADF;
                return NULL;
        }
        if (h->share && h->share->removed) {
                *ret_err = -ESTALE;
                return NULL;
        }
        return h;
}

static void
handle_free (FsServer *s, FsHandle *h)
{
        if (h->fd >= 0)
                close (h->fd);
        if (h->node)
                fs_node_release (s, h->node);
        fs_share_unref (h->share);
        g_free (h);
}

void
fs_handle_close (FsServer *s, FsHandle *h)
{
        g_hash_table_steal (s->handles, &h->id);
        handle_free (s, h);
}

/* Server -------------------------------------------------------------------------------------- */

FsServer *
fs_server_new (const char *keep_dir, FsAudit *audit)
{
        FsServer *s = g_new0 (FsServer, 1);

        s->shares = g_hash_table_new_full (g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify) fs_share_unref);
        s->nodes = g_hash_table_new_full (g_int64_hash, g_int64_equal, NULL, g_free);
        s->handles = g_hash_table_new (g_int64_hash, g_int64_equal);
        s->next_node = FS_ROOT_NODE + 1;
        s->next_handle = 1;
        s->max_handles = DEFAULT_MAX_HANDLES;
        s->max_nodes = DEFAULT_MAX_NODES;
        s->keep_dir = g_strdup (keep_dir);
        s->journal = keep_dir ? fs_journal_open (keep_dir) : NULL;
        s->audit = audit;
        s->own_dirs = g_array_new (FALSE, FALSE, sizeof (FsDirId));
        return s;
}

static void
drop_connection_state (FsServer *s)
{
        GHashTableIter iter;
        FsHandle *h;
        FsNode *node;

        g_hash_table_iter_init (&iter, s->handles);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &h)) {
                g_hash_table_iter_steal (&iter);
                handle_free (s, h);
        }
        /* Every node is gone with the connection; free without walking the tree. */
        g_hash_table_iter_init (&iter, s->nodes);
        while (g_hash_table_iter_next (&iter, NULL, (gpointer *) &node)) {
                if (node->children)
                        g_hash_table_unref (node->children);
                if (node->is_share_root && node->share->root_node == node)
                        node->share->root_node = NULL;
                fs_share_unref (node->share);
                g_free (node->name);
                g_hash_table_iter_remove (&iter);
        }
}

void
fs_server_reset (FsServer *s)
{
        drop_connection_state (s);
}

void
fs_server_free (FsServer *s)
{
        if (!s)
                return;
        drop_connection_state (s);
        g_hash_table_unref (s->handles);
        g_hash_table_unref (s->nodes);
        g_hash_table_unref (s->shares);
        g_free (s->keep_dir);
        g_clear_pointer (&s->journal, fs_journal_close);
        fs_keep_clear (s);
        g_strfreev (s->policy_protected);
        g_strfreev (s->policy_hidden);
        g_clear_pointer (&s->managed, corral_policy_unref);
        g_array_unref (s->own_dirs);
        g_free (s);
}

void
fs_server_set_notify (FsServer *s, FsNotifyFunc func, void *user_data)
{
        s->notify = func;
        s->notify_data = user_data;
}

void
fs_server_set_shm (FsServer *s, uint8_t *shm, size_t size)
{
        s->shm = shm;
        s->shm_size = shm ? size : 0;
}

gboolean
fs_server_set_policy_paths (FsServer *s,
                            const char *const *protected,
                            const char *const *hidden,
                            GError **error)
{
        g_autoptr (FsPathRules) check = fs_path_rules_new (protected, hidden, error);

        if (!check)
                return FALSE;
        g_strfreev (s->policy_protected);
        g_strfreev (s->policy_hidden);
        s->policy_protected = g_strdupv ((char **) protected);
        s->policy_hidden = g_strdupv ((char **) hidden);
        return TRUE;
}

void
fs_server_set_managed_policy (FsServer *s, CorralPolicy *policy)
{
        if (policy)
                corral_policy_ref (policy);
        g_clear_pointer (&s->managed, corral_policy_unref);
        s->managed = policy;
}

void
fs_server_set_own_dirs (FsServer *s, const char *const *paths)
{
        g_array_unref (s->own_dirs);
        s->own_dirs = fs_own_ids (paths);
}

bool
fs_server_is_own_dir (FsServer *s, const struct stat *st)
{
        return fs_own_ids_contain (s->own_dirs, st);
}

void
fs_server_set_limits (FsServer *s, guint max_handles, guint max_nodes)
{
        s->max_handles = max_handles;
        s->max_nodes = max_nodes;
}

guint
fs_server_n_nodes (FsServer *s)
{
        return g_hash_table_size (s->nodes);
}

guint
fs_server_n_handles (FsServer *s)
{
        return g_hash_table_size (s->handles);
}

/* Dispatch ------------------------------------------------------------------------------------ */

static void
audit (FsCtx *ctx, int r)
{
        FsAuditRecord rec = {
                .share = ctx->share ? ctx->share->name : NULL,
                .op = ctx->audit_op ? ctx->audit_op : fs_op_name (ctx->q->op),
                .path = ctx->path,
                .path2 = ctx->path2,
                .size = r < 0 ? -1 : ctx->size,
        };
        g_autofree char *message = NULL;

        if (r < 0 && ctx->rule) {
                rec.result = "refused";
                rec.rule = ctx->rule;
                rec.errnum = -r;
                message = fs_rule_explain (ctx->rule, ctx->share ? ctx->share->name : "workspace",
                                           ctx->share ? ctx->share->mode : FS_MODE_RO,
                                           ctx->path ? ctx->path : "");
                if (ctx->detail) {
                        char *more = g_strdup_printf ("%s (%s)", message, ctx->detail);
                        g_free (message);
                        message = more;
                }
                rec.message = message;
        } else if (r < 0) {
                rec.result = "error";
                rec.errnum = -r;
        } else {
                rec.result = "ok";
        }
        fs_audit_write (ctx->s->audit, &rec);
}

bool
fs_server_handle (FsServer *s, const uint8_t *payload, size_t len, FsWriter *w)
{
        FsRequest q;
        FsCtx ctx = { .s = s, .q = &q, .w = w, .size = -1 };
        int r;

        w->len = 0;
        w->overflow = false;
        r = fs_request_decode (payload, len, &q);
        if (r < 0) {
                fs_reply_error (w, -r, NULL);
                return true;
        }
        if (q.op == FS_OP_FORGET || q.op == FS_OP_BATCH_FORGET) {
                fs_ops_dispatch (&ctx);
                return false;
        }

        fs_write_u32 (w, 0);
        r = fs_ops_dispatch (&ctx);
        if (r >= 0 && w->overflow)
                r = -EIO;
        if (r < 0) {
                w->len = 0;
                w->overflow = false;
                fs_reply_error (w, -r, ctx.rule);
        }
        /* Changes, and every refusal by a rule, go to the audit log; so do failed changes. */
        if (ctx.rule || ctx.audit_op)
                audit (&ctx, r);
        g_free (ctx.path);
        g_free (ctx.path2);
        g_free (ctx.detail);
        fs_share_unref (ctx.share_hold);
        return true;
}
