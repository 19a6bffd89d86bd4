/* fs-client.c — see fs-client.h.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "fs-client.h"
#include "fs-resolve.h"

#include <errno.h>
#include <fcntl.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"

FsClient *
fs_client_new (FsMode mode)
{
        g_autoptr (GError) error = NULL;
        FsClient *c = g_new0 (FsClient, 1);
        g_autofree char *keep = NULL, *other = NULL;

        c->dir = g_dir_make_tmp ("corral-fs-XXXXXX", &error);
        g_assert_no_error (error);
        c->share = g_build_filename (c->dir, "share", NULL);
        c->outside = g_build_filename (c->dir, "outside", NULL);
        other = g_build_filename (c->dir, "other", NULL);
        keep = g_build_filename (c->dir, "keep", NULL);
        c->audit_path = g_build_filename (c->dir, "audit.jsonl", NULL);
        g_assert_cmpint (g_mkdir (c->share, 0755), ==, 0);
        g_assert_cmpint (g_mkdir (c->outside, 0755), ==, 0);
        g_assert_cmpint (g_mkdir (other, 0755), ==, 0);
        {
                g_autofree char *canary = g_build_filename (c->outside, "canary", NULL);
                g_assert_true (g_file_set_contents (canary, "canary", -1, NULL));
        }

        c->audit = fs_audit_open (c->audit_path, &error);
        g_assert_no_error (error);
        c->server = fs_server_new (keep, c->audit);
        g_assert_true (fs_server_add_share (c->server, "s", c->share, mode, NULL, &error));
        g_assert_no_error (error);
        g_assert_true (fs_server_add_share (c->server, "other", other, FS_MODE_RW, NULL, &error));
        c->buf = g_malloc (PROTO_MAX_PAYLOAD);
        c->request = g_malloc (PROTO_MAX_PAYLOAD);
        return c;
}

static int
rm_rf_cb (const char *path)
{
        g_autoptr (GFile) file = g_file_new_for_path (path);
        g_autoptr (GFileEnumerator) e = g_file_enumerate_children (
                file, G_FILE_ATTRIBUTE_STANDARD_NAME "," G_FILE_ATTRIBUTE_STANDARD_TYPE,
                G_FILE_QUERY_INFO_NOFOLLOW_SYMLINKS, NULL, NULL);

        chmod (path, 0755);
        while (e) {
                GFileInfo *info = g_file_enumerator_next_file (e, NULL, NULL);
                g_autofree char *child = NULL;

                if (!info)
                        break;
                child = g_build_filename (path, g_file_info_get_name (info), NULL);
                if (g_file_info_get_file_type (info) == G_FILE_TYPE_DIRECTORY)
                        rm_rf_cb (child);
                else
                        g_unlink (child);
                g_object_unref (info);
        }
        return g_rmdir (path);
}

void
fs_client_free (FsClient *c)
{
        if (!c)
                return;
        fs_server_free (c->server);
        fs_audit_close (c->audit);
        rm_rf_cb (c->dir);
        g_free (c->dir);
        g_free (c->share);
        g_free (c->outside);
        g_free (c->audit_path);
        g_free (c->buf);
        g_free (c->request);
        g_free (c);
}

int
fs_client_call_raw (FsClient *c, const uint8_t *payload, size_t len, FsReader *body)
{
        FsWriter w;
        FsReader r;
        uint32_t err;

        fs_writer_init (&w, c->buf, PROTO_MAX_PAYLOAD);
        c->last_rule[0] = '\0';
        if (!fs_server_handle (c->server, payload, len, &w))
                return 0;
        g_assert_false (w.overflow);
        fs_reader_init (&r, w.buf, w.len);
        err = fs_read_u32 (&r);
        g_assert_false (r.bad);
        if (err) {
                FsStr rule = fs_read_str (&r, FS_MAX_RULE);
                g_assert_false (r.bad);
                g_assert_cmpuint (r.left, ==, 0);
                memcpy (c->last_rule, rule.ptr, rule.len);
                c->last_rule[rule.len] = '\0';
                g_assert_cmpuint (err, <, 4096);
                return -(int) err;
        }
        if (body)
                *body = r;
        return 0;
}

int
fs_client_call (FsClient *c, const FsRequest *q, FsReader *body)
{
        FsWriter w;

        fs_writer_init (&w, c->request, PROTO_MAX_PAYLOAD);
        g_assert_cmpint (fs_request_encode (q, &w), ==, 0);
        return fs_client_call_raw (c, c->request, w.len, body);
}

static FsStr
str (const char *s)
{
        return (FsStr){ s, s ? strlen (s) : 0 };
}

static void
read_entry_done (FsReader *r, FsEntry *ret)
{
        FsEntry e;
        fs_read_entry (r, &e);
        g_assert_false (r->bad);
        if (ret)
                *ret = e;
}

int
fs_client_lookup (FsClient *c, uint64_t parent, const char *name, FsEntry *ret)
{
        FsRequest q = { .op = FS_OP_LOOKUP, .node = parent, .name = str (name) };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0)
                read_entry_done (&r, ret);
        return res;
}

int
fs_client_walk (FsClient *c, const char *path, FsEntry *ret)
{
        g_auto (GStrv) parts = g_strsplit (path, "/", -1);
        FsEntry e = { .node = FS_ROOT_NODE };

        for (guint i = 0; parts[i]; i++) {
                int r = fs_client_lookup (c, e.node, parts[i], &e);
                if (r < 0)
                        return r;
        }
        if (ret)
                *ret = e;
        return 0;
}

int
fs_client_open (FsClient *c, uint64_t node, uint32_t flags, uint64_t *ret_handle)
{
        FsRequest q = { .op = FS_OP_OPEN, .node = node, .flags = flags };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0) {
                uint64_t h = fs_read_u64 (&r);
                fs_read_u32 (&r);
                g_assert_false (r.bad);
                if (ret_handle)
                        *ret_handle = h;
        }
        return res;
}

int
fs_client_create (FsClient *c,
                  uint64_t parent,
                  const char *name,
                  uint32_t mode,
                  uint32_t flags,
                  FsEntry *ret_entry,
                  uint64_t *ret_handle)
{
        FsRequest q = {
                .op = FS_OP_CREATE, .node = parent, .name = str (name), .mode = mode, .flags = flags
        };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0) {
                uint64_t h;
                read_entry_done (&r, ret_entry);
                h = fs_read_u64 (&r);
                fs_read_u32 (&r);
                g_assert_false (r.bad);
                if (ret_handle)
                        *ret_handle = h;
        }
        return res;
}

int
fs_client_write (FsClient *c, uint64_t handle, uint64_t offset, const void *data, size_t len)
{
        FsRequest q = {
                .op = FS_OP_WRITE, .handle = handle, .offset = offset, .data = data, .data_len = len
        };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0) {
                uint32_t n = fs_read_u32 (&r);
                g_assert_false (r.bad);
                return (int) n;
        }
        return res;
}

int
fs_client_read (FsClient *c, uint64_t handle, uint64_t offset, uint32_t size, GBytes **ret)
{
        FsRequest q = { .op = FS_OP_READ, .handle = handle, .offset = offset, .size = size };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0 && ret)
                *ret = g_bytes_new (r.p, r.left);
        return res;
}

int
fs_client_release (FsClient *c, uint64_t handle)
{
        FsRequest q = { .op = FS_OP_RELEASE, .handle = handle };
        return fs_client_call (c, &q, NULL);
}

int
fs_client_mkdir (FsClient *c, uint64_t parent, const char *name, uint32_t mode, FsEntry *ret)
{
        FsRequest q = { .op = FS_OP_MKDIR, .node = parent, .name = str (name), .mode = mode };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0)
                read_entry_done (&r, ret);
        return res;
}

int
fs_client_simple (FsClient *c, uint16_t op, uint64_t node, const char *name)
{
        FsRequest q = { .op = op, .node = node, .name = str (name) };
        return fs_client_call (c, &q, NULL);
}

int
fs_client_unlink (FsClient *c, uint64_t parent, const char *name)
{
        return fs_client_simple (c, FS_OP_UNLINK, parent, name);
}

int
fs_client_rmdir (FsClient *c, uint64_t parent, const char *name)
{
        return fs_client_simple (c, FS_OP_RMDIR, parent, name);
}

int
fs_client_rename (FsClient *c,
                  uint64_t parent,
                  const char *name,
                  uint64_t newparent,
                  const char *newname,
                  uint32_t flags)
{
        FsRequest q = { .op = FS_OP_RENAME,
                        .node = parent,
                        .name = str (name),
                        .node2 = newparent,
                        .name2 = str (newname),
                        .flags = flags };
        return fs_client_call (c, &q, NULL);
}

int
fs_client_symlink (FsClient *c, uint64_t parent, const char *name, const char *target, FsEntry *ret)
{
        FsRequest q = {
                .op = FS_OP_SYMLINK, .node = parent, .name = str (name), .name2 = str (target)
        };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0)
                read_entry_done (&r, ret);
        return res;
}

int
fs_client_link (FsClient *c, uint64_t node, uint64_t newparent, const char *newname)
{
        FsRequest q = {
                .op = FS_OP_LINK, .node = node, .node2 = newparent, .name2 = str (newname)
        };
        return fs_client_call (c, &q, NULL);
}

int
fs_client_readlink (FsClient *c, uint64_t node, char **ret)
{
        FsRequest q = { .op = FS_OP_READLINK, .node = node };
        FsReader r;
        int res = fs_client_call (c, &q, &r);

        if (res == 0) {
                FsStr s = fs_read_str (&r, FS_MAX_SYMLINK);
                g_assert_false (r.bad);
                *ret = g_strndup (s.ptr, s.len);
        }
        return res;
}

int
fs_client_setattr (FsClient *c, uint64_t node, const FsSetattr *set)
{
        FsRequest q = { .op = FS_OP_SETATTR, .node = node, .set = *set };
        return fs_client_call (c, &q, NULL);
}

int
fs_client_put (FsClient *c, const char *path, const char *content)
{
        g_autofree char *dir = g_path_get_dirname (path);
        g_autofree char *base = g_path_get_basename (path);
        FsEntry parent, e;
        uint64_t h;
        int r;

        r = fs_client_walk (c, dir, &parent);
        if (r < 0)
                return r;
        r = fs_client_lookup (c, parent.node, base, &e);
        if (r == 0)
                r = fs_client_open (c, e.node, FS_O_WRONLY | FS_O_TRUNC, &h);
        else if (r == -ENOENT)
                r = fs_client_create (c, parent.node, base, 0644, FS_O_WRONLY, NULL, &h);
        if (r < 0)
                return r;
        r = fs_client_write (c, h, 0, content, strlen (content));
        fs_client_release (c, h);
        return r < 0 ? r : 0;
}

char *
fs_client_host (FsClient *c, const char *rel)
{
        return g_build_filename (c->share, rel, NULL);
}

void
fs_client_host_write (FsClient *c, const char *rel, const char *content)
{
        g_autofree char *path = fs_client_host (c, rel);
        g_autofree char *dir = g_path_get_dirname (path);

        g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
        g_assert_true (g_file_set_contents (path, content, -1, NULL));
}

char *
fs_client_host_read (FsClient *c, const char *rel)
{
        g_autofree char *path = fs_client_host (c, rel);
        char *text = NULL;

        if (!g_file_get_contents (path, &text, NULL, NULL))
                return NULL;
        return text;
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
        return strcmp (*(const char *const *) a, *(const char *const *) b);
}

static void
digest_dir (GChecksum *sum, const char *dir)
{
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
        const char *name;

        if (!d)
                return;
        while ((name = g_dir_read_name (d)))
                g_ptr_array_add (names, g_strdup (name));
        g_ptr_array_sort (names, compare_strings);
        for (guint i = 0; i < names->len; i++) {
                g_autofree char *path = g_build_filename (dir, names->pdata[i], NULL);
                struct stat st;
                g_autofree char *head = NULL;

                if (lstat (path, &st) < 0)
                        continue;
                head = g_strdup_printf ("%s %o %" G_GINT64_FORMAT "\n", (char *) names->pdata[i],
                                        st.st_mode, (gint64) st.st_size);
                g_checksum_update (sum, (const guchar *) head, -1);
                if (S_ISDIR (st.st_mode)) {
                        digest_dir (sum, path);
                } else if (S_ISREG (st.st_mode)) {
                        g_autofree char *text = NULL;
                        gsize len = 0;
                        if (g_file_get_contents (path, &text, &len, NULL))
                                g_checksum_update (sum, (const guchar *) text, (gssize) len);
                } else if (S_ISLNK (st.st_mode)) {
                        g_autofree char *target = g_file_read_link (path, NULL);
                        if (target)
                                g_checksum_update (sum, (const guchar *) target, -1);
                }
        }
}

char *
fs_client_tree_digest (const char *dir)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);

        digest_dir (sum, dir);
        return g_strdup (g_checksum_get_string (sum));
}

char *
fs_client_audit_text (FsClient *c)
{
        char *text = NULL;

        g_file_get_contents (c->audit_path, &text, NULL, NULL);
        return text ? text : g_strdup ("");
}

typedef struct {
        GTestFunc func;
        bool fallback;
} Variant;

static void
run_variant (gconstpointer data)
{
        const Variant *v = data;

        fs_resolve_force_fallback (v->fallback);
        v->func ();
        fs_resolve_force_fallback (false);
}

void
fs_client_add_variants (const char *prefix, const FsClientTest *tests, guint n_tests)
{
        for (int fallback = 0; fallback <= 1; fallback++) {
                for (guint i = 0; i < n_tests; i++) {
                        g_autofree char *path =
                                g_strdup_printf ("/%s/%s/%s", prefix,
                                                 fallback ? "fallback" : "openat2", tests[i].name);
                        Variant *v = g_new0 (Variant, 1);

                        v->func = tests[i].func;
                        v->fallback = fallback;
                        g_test_add_data_func_full (path, v, run_variant, g_free);
                }
        }
}
