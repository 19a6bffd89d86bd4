/* corral-image.c — the guest image store.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-image.h"

#include "corral-glib-compat.h"
#include "corral-image-sign.h"
#include "corral-paths.h"
#include "corral-policy.h"
#include "corral-cjson.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HASH_CHUNK (1024 * 1024)
#define STDERR_TAIL_LINES 12
#define DEFAULT_CMDLINE "console=ttyS0 quiet panic=-1"

/* clang-format off */
G_DEFINE_QUARK (corral-image-error-quark, corral_image_error)
/* clang-format on */

void
corral_image_free (CorralImage *image)
{
        if (image == NULL)
                return;
        g_free (image->name);
        g_free (image->dir);
        g_free (image->kernel);
        g_free (image->initrd);
        g_free (image->disk);
        g_free (image->cmdline);
        g_free (image->manifest_sha256);
        g_free (image->stamp);
        g_free (image);
}

CorralImage *
corral_image_copy (const CorralImage *image)
{
        CorralImage *copy;

        if (image == NULL)
                return NULL;
        copy = g_new0 (CorralImage, 1);
        copy->name = g_strdup (image->name);
        copy->dir = g_strdup (image->dir);
        copy->kernel = g_strdup (image->kernel);
        copy->initrd = g_strdup (image->initrd);
        copy->disk = g_strdup (image->disk);
        copy->cmdline = g_strdup (image->cmdline);
        copy->manifest_sha256 = g_strdup (image->manifest_sha256);
        copy->stamp = g_strdup (image->stamp);
        return copy;
}

void
corral_image_info_free (CorralImageInfo *info)
{
        if (info == NULL)
                return;
        g_free (info->name);
        g_free (info->dir);
        g_free (info->problem);
        g_free (info);
}

char *
corral_image_cache_dir (void)
{
        const char *xdg = g_getenv ("XDG_CACHE_HOME");

        if (xdg != NULL && g_path_is_absolute (xdg))
                return g_build_filename (xdg, "corral", "images", NULL);
        return g_build_filename (g_get_home_dir (), ".cache", "corral", "images", NULL);
}

gboolean
corral_image_name_is_valid (const char *name)
{
        size_t len;

        if (name == NULL)
                return FALSE;
        len = strlen (name);
        if (len == 0 || len > 64 || !g_ascii_isalnum (name[0]))
                return FALSE;
        for (size_t i = 0; i < len; i++) {
                char c = name[i];
                if (!(g_ascii_islower (c) || g_ascii_isdigit (c) || c == '-' || c == '_'))
                        return FALSE;
        }
        return TRUE;
}

gboolean
corral_image_is_builtin (const char *name)
{
        return g_strcmp0 (name, "minimal") == 0 || g_strcmp0 (name, "standard") == 0 ||
               g_strcmp0 (name, "desktop") == 0;
}

static gboolean
check_name (const char *name, GError **error)
{
        if (corral_image_name_is_valid (name))
                return TRUE;
        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                     "invalid image name '%s' (use lowercase letters, digits, '-' and '_')",
                     name ? name : "(null)");
        return FALSE;
}

/* An artifact is a plain file name next to the manifest: no directories, no "..". */
static gboolean
artifact_name_is_valid (const char *name)
{
        return name != NULL && name[0] != '\0' && name[0] != '.' && strchr (name, '/') == NULL &&
               strchr (name, '\\') == NULL && strlen (name) <= 255;
}

static gboolean
is_sha256_hex (const char *s)
{
        if (s == NULL || strlen (s) != 64)
                return FALSE;
        for (int i = 0; i < 64; i++)
                if (!(g_ascii_isdigit (s[i]) || (s[i] >= 'a' && s[i] <= 'f')))
                        return FALSE;
        return TRUE;
}

/* Hash FD to the end with GChecksum in HASH_CHUNK pieces. */
static char *
sha256_fd (int fd, GError **error)
{
        g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
        g_autofree guchar *buf = g_malloc (HASH_CHUNK);

        for (;;) {
                ssize_t n = read (fd, buf, HASH_CHUNK);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        int errsv = errno;
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "%s",
                                     g_strerror (errsv));
                        return NULL;
                }
                if (n == 0)
                        break;
                g_checksum_update (sum, buf, n);
        }
        return g_strdup (g_checksum_get_string (sum));
}

/* Open a regular file NAME inside DIRFD without following symlinks. */
static int
open_artifact (int dirfd, const char *name, GError **error)
{
        struct stat st;
        int fd = openat (dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);

        if (fd < 0) {
                int errsv = errno;
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv), "%s",
                             errsv == ELOOP ? "is a symbolic link" : g_strerror (errsv));
                return -1;
        }
        if (fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)) {
                g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_REGULAR_FILE, "not a regular file");
                close (fd);
                return -1;
        }
        return fd;
}

/* manifest.sig, bounded; NULL when there is none (ret_missing) or it cannot be read. */
static char *
read_signature (int dirfd, gsize *ret_len, gboolean *ret_missing)
{
        g_autoptr (GError) local = NULL;
        g_autofd int fd = open_artifact (dirfd, "manifest.sig", &local);
        g_autofree char *buf = NULL;
        gsize len = 0;
        ssize_t n;

        *ret_missing = g_error_matches (local, G_IO_ERROR, G_IO_ERROR_NOT_FOUND);
        if (fd < 0)
                return NULL;
        buf = g_malloc (CORRAL_IMAGE_SIGNATURE_MAX + 2);
        while (len <= CORRAL_IMAGE_SIGNATURE_MAX &&
               (n = read (fd, buf + len, CORRAL_IMAGE_SIGNATURE_MAX + 1 - len)) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return NULL;
                len += (gsize) n;
        }
        buf[len] = '\0';
        *ret_len = len;
        return g_steal_pointer (&buf);
}

static gboolean
untrusted (GError **error, const char *image_name, const char *why)
{
        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_UNTRUSTED,
                     _ ("The workspace image “%s” cannot be used: %s"), image_name, why);
        return FALSE;
}

/* The organisation's images.requireSigned and images.trustedKeys (locked; corral-policy.h):
 * the manifest, the very bytes that were read and are about to be checked against the
 * artifacts, signed by a key it trusts. Without either key, nothing is asked. */
static gboolean
check_signature (int dirfd, const char *image_name, const char *manifest, gsize len, GError **error)
{
        g_autoptr (CorralPolicy) policy = corral_policy_load_default (error);
        g_autoptr (GError) local = NULL;
        g_autofree char *sig = NULL, *key = NULL;
        CorralPolicySetting req_how, keys_how;
        gboolean required = FALSE, missing = FALSE, trusted;
        guint n_lists = 0;
        gsize sig_len = 0;

        if (!policy)
                return FALSE;
        required = corral_policy_get_bool (policy, "images.requireSigned", &required, &req_how) &&
                   req_how.locked && required;
        trusted =
                corral_policy_get_allow_lists (policy, "images.trustedKeys", &n_lists, &keys_how) &&
                n_lists > 0 && keys_how.locked;
        if (!required && !trusted)
                return TRUE;
        if (!(sig = read_signature (dirfd, &sig_len, &missing))) {
                if (missing && !required)
                        return TRUE;
                return untrusted (error, image_name,
                                  missing ? _ ("it is not signed, and your organisation requires "
                                               "a signed image (set by your organisation).")
                                          : _ ("its signature cannot be read."));
        }
        if (!(key = corral_image_signature_check (manifest, len, sig, sig_len, &local)))
                return untrusted (error, image_name, local->message);
        if (!trusted)
                return untrusted (error, image_name,
                                  _ ("your organisation requires a signed image but names no key "
                                     "to trust (images.trustedKeys, set by your organisation)."));
        if (!corral_policy_allows (policy, "images.trustedKeys", key, &local))
                return untrusted (error, image_name, local->message);
        return TRUE;
}

/* Read manifest.json (bounded) and its sha256. */
static char *
read_manifest (int dirfd, const char *path, gsize *len_out, char **sha_out, GError **error)
{
        g_autoptr (GError) local = NULL;
        g_autofd int fd = open_artifact (dirfd, "manifest.json", &local);
        struct stat st;
        g_autofree char *buf = NULL;
        gsize len = 0;

        if (fd < 0) {
                g_set_error (error, CORRAL_IMAGE_ERROR,
                             g_error_matches (local, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)
                                     ? CORRAL_IMAGE_ERROR_NOT_BUILT
                                     : CORRAL_IMAGE_ERROR_INVALID,
                             "%s: %s", path, local->message);
                return NULL;
        }
        if (fstat (fd, &st) < 0 || st.st_size > CORRAL_IMAGE_MANIFEST_MAX) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: manifest larger than %d bytes", path, CORRAL_IMAGE_MANIFEST_MAX);
                return NULL;
        }
        /* Read at most MAX + 1 bytes whatever fstat said (the file may grow meanwhile). */
        buf = g_malloc (CORRAL_IMAGE_MANIFEST_MAX + 2);
        while (len <= CORRAL_IMAGE_MANIFEST_MAX) {
                ssize_t n = read (fd, buf + len, CORRAL_IMAGE_MANIFEST_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     "%s: %s", path, g_strerror (errno));
                        return NULL;
                }
                if (n == 0)
                        break;
                len += n;
        }
        if (len > CORRAL_IMAGE_MANIFEST_MAX) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: manifest larger than %d bytes", path, CORRAL_IMAGE_MANIFEST_MAX);
                return NULL;
        }
        buf[len] = '\0';
        *sha_out = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) buf, len);
        *len_out = len;
        return g_steal_pointer (&buf);
}

static const char *
json_string (const cJSON *obj, const char *key)
{
        const cJSON *item = cJSON_GetObjectItemCaseSensitive (obj, key);
        return cJSON_IsString (item) ? item->valuestring : NULL;
}

/* Boot artifact KEY of the manifest's "boot" object (or DEFAULT_NAME), which must be listed in
 * "artifacts". Returns FALSE with INVALID on a bad entry; *out NULL when absent and optional. */
static gboolean
boot_artifact (const cJSON *boot,
               const cJSON *artifacts,
               const char *key,
               const char *default_name,
               gboolean required,
               const char *dir,
               const char *manifest_path,
               char **out,
               GError **error)
{
        const char *name = default_name;
        const cJSON *item = boot ? cJSON_GetObjectItemCaseSensitive (boot, key) : NULL;

        *out = NULL;
        if (item != NULL && !cJSON_IsNull (item)) {
                if (!cJSON_IsString (item) || !artifact_name_is_valid (item->valuestring)) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     "%s: malformed manifest: bad boot.%s", manifest_path, key);
                        return FALSE;
                }
                name = item->valuestring;
        } else if (item != NULL) {
                name = NULL;
        }
        if (name != NULL && cJSON_GetObjectItemCaseSensitive (artifacts, name) == NULL) {
                if (item == NULL && !required)
                        return TRUE;
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: boot.%s '%s' is not a listed artifact",
                             manifest_path, key, name);
                return FALSE;
        }
        if (name == NULL && required) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: no boot.%s", manifest_path, key);
                return FALSE;
        }
        if (name != NULL)
                *out = g_build_filename (dir, name, NULL);
        return TRUE;
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
        return strcmp (*(char *const *) a, *(char *const *) b);
}

/* Every entry of the image folder, by name: what it is and when it last changed. A file
 * rewritten, replaced, added or removed changes it (ctime cannot be set back). */
static char *
folder_stamp (int dirfd)
{
        g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GString) out = g_string_new (NULL);
        int fd = dup (dirfd);
        DIR *d = fd >= 0 ? fdopendir (fd) : NULL;
        struct dirent *e;

        if (!d) {
                if (fd >= 0)
                        close (fd);
                return g_strdup ("?");
        }
        rewinddir (d);
        while ((e = readdir (d)))
                if (strcmp (e->d_name, ".") != 0 && strcmp (e->d_name, "..") != 0)
                        g_ptr_array_add (names, g_strdup (e->d_name));
        closedir (d);
        g_ptr_array_sort (names, compare_strings);
        for (guint i = 0; i < names->len; i++) {
                const char *n = names->pdata[i];
                struct stat st;

                if (fstatat (dirfd, n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        g_string_append_printf (out, "%s:-;", n);
                        continue;
                }
                g_string_append_printf (out, "%s:%o:%ju:%ju:%jd:%jd.%09ld:%jd.%09ld;", n,
                                        (unsigned) st.st_mode, (uintmax_t) st.st_dev,
                                        (uintmax_t) st.st_ino, (intmax_t) st.st_size,
                                        (intmax_t) st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                                        (intmax_t) st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
        }
        return g_string_free (g_steal_pointer (&out), FALSE);
}

gboolean
corral_image_recheck (const CorralImage *image, GError **error)
{
        g_autofree char *manifest_path = NULL, *stamp = NULL, *text = NULL, *sha = NULL;
        g_autofd int dirfd = -1;
        gsize len = 0;

        g_return_val_if_fail (image != NULL, FALSE);
        dirfd = open (image->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd >= 0)
                stamp = folder_stamp (dirfd);
        if (dirfd < 0 || !image->stamp || g_strcmp0 (stamp, image->stamp) != 0) {
                g_autoptr (CorralImage) again =
                        corral_image_load_dir (image->name, image->dir, error);

                return again && g_strcmp0 (again->manifest_sha256, image->manifest_sha256) == 0;
        }
        manifest_path = g_build_filename (image->dir, "manifest.json", NULL);
        if (!(text = read_manifest (dirfd, manifest_path, &len, &sha, error)))
                return FALSE;
        if (g_strcmp0 (sha, image->manifest_sha256) != 0) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED,
                             "image '%s': its manifest changed since it was verified: %s",
                             image->name, manifest_path);
                return FALSE;
        }
        return check_signature (dirfd, image->name, text, len, error);
}

CorralImage *
corral_image_load_dir (const char *name, const char *dir_in, GError **error)
{
        g_autofree char *dir = NULL;
        g_autofree char *manifest_path = NULL;
        g_autofree char *text = NULL;
        g_autofree char *manifest_sha = NULL;
        g_autofree char *stamp = NULL;
        g_autoptr (cJSON) root = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autofd int dirfd = -1;
        const cJSON *artifacts, *boot, *entry;
        const char *image_name, *cmdline;
        gsize len = 0;

        if (name != NULL && !check_name (name, error))
                return NULL;
        dir = g_canonicalize_filename (dir_in, NULL);
        manifest_path = g_build_filename (dir, "manifest.json", NULL);
        dirfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT,
                             "image directory %s: %s", dir, g_strerror (errno));
                return NULL;
        }
        /* Before anything is read: a file changed later differs from it (corral_image_recheck). */
        stamp = folder_stamp (dirfd);
        text = read_manifest (dirfd, manifest_path, &len, &manifest_sha, error);
        if (text == NULL)
                return NULL;
        if (memchr (text, '\0', len) != NULL ||
            (root = cJSON_ParseWithLength (text, len)) == NULL || !cJSON_IsObject (root)) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: not a JSON object", manifest_path);
                return NULL;
        }
        image_name = json_string (root, "image");
        if (!corral_image_name_is_valid (image_name)) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: no valid \"image\" name", manifest_path);
                return NULL;
        }
        if (name != NULL && strcmp (name, image_name) != 0) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: manifest is for image '%s', not '%s'", manifest_path, image_name,
                             name);
                return NULL;
        }
        artifacts = cJSON_GetObjectItemCaseSensitive (root, "artifacts");
        if (!cJSON_IsObject (artifacts) || artifacts->child == NULL) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: no \"artifacts\"", manifest_path);
                return NULL;
        }
        /* Validate everything before reading any artifact. */
        cJSON_ArrayForEach (entry, artifacts) {
                if (!artifact_name_is_valid (entry->string) ||
                    strcmp (entry->string, "manifest.json") == 0) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     "%s: malformed manifest: bad artifact name '%s' (artifacts "
                                     "are plain files in the image directory)",
                                     manifest_path, entry->string ? entry->string : "");
                        return NULL;
                }
                if (!cJSON_IsString (entry) || !is_sha256_hex (entry->valuestring)) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     "%s: malformed manifest: bad sha256 for '%s'", manifest_path,
                                     entry->string);
                        return NULL;
                }
        }

        if (!check_signature (dirfd, image_name, text, len, error))
                return NULL;
        image = g_new0 (CorralImage, 1);
        image->name = g_strdup (image_name);
        image->dir = g_strdup (dir);
        image->manifest_sha256 = g_steal_pointer (&manifest_sha);
        boot = cJSON_GetObjectItemCaseSensitive (root, "boot");
        if (boot != NULL && !cJSON_IsObject (boot)) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: \"boot\" is not an object", manifest_path);
                return NULL;
        }
        if (!boot_artifact (boot, artifacts, "kernel", "vmlinuz", TRUE, dir, manifest_path,
                            &image->kernel, error) ||
            !boot_artifact (boot, artifacts, "initrd", "initramfs.img", TRUE, dir, manifest_path,
                            &image->initrd, error) ||
            !boot_artifact (boot, artifacts, "disk", "disk.qcow2", FALSE, dir, manifest_path,
                            &image->disk, error))
                return NULL;
        cmdline = boot ? json_string (boot, "cmdline") : NULL;
        if (cmdline != NULL && (strlen (cmdline) > 2048 || strpbrk (cmdline, "\n\r") != NULL)) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             "%s: malformed manifest: bad boot.cmdline", manifest_path);
                return NULL;
        }
        image->cmdline = g_strdup (cmdline ? cmdline : DEFAULT_CMDLINE);

        cJSON_ArrayForEach (entry, artifacts) {
                g_autoptr (GError) local = NULL;
                g_autofree char *path = g_build_filename (dir, entry->string, NULL);
                g_autofd int fd = open_artifact (dirfd, entry->string, &local);
                g_autofree char *actual = NULL;

                if (fd >= 0)
                        actual = sha256_fd (fd, &local);
                if (actual == NULL) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED,
                                     "image '%s': artifact %s is missing or unreadable (%s): %s",
                                     image_name, entry->string, local->message, path);
                        return NULL;
                }
                if (strcmp (actual, entry->valuestring) != 0) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED,
                                     "image '%s': artifact %s was modified (sha256 %s, manifest "
                                     "says %s): %s; rebuild it with `corralctl image build %s`",
                                     image_name, entry->string, actual, entry->valuestring, path,
                                     image_name);
                        return NULL;
                }
        }
        image->stamp = g_steal_pointer (&stamp);
        return g_steal_pointer (&image);
}

/* Directories NAME-HEX (complete builds: they have a manifest.json), newest manifest first. */
typedef struct {
        char *dir;
        char *name;
        gint64 mtime;
} Candidate;

static void
candidate_free (gpointer p)
{
        Candidate *c = p;
        g_free (c->dir);
        g_free (c->name);
        g_free (c);
}

static int
candidate_cmp (gconstpointer a, gconstpointer b)
{
        const Candidate *x = *(Candidate *const *) a, *y = *(Candidate *const *) b;
        int r = strcmp (x->name, y->name);

        if (r != 0)
                return r;
        return x->mtime < y->mtime ? 1 : x->mtime > y->mtime ? -1 : strcmp (x->dir, y->dir);
}

/* NAME NULL: every image. */
static GPtrArray *
scan_cache (const char *name, GError **error)
{
        g_autofree char *cache = corral_image_cache_dir ();
        g_autoptr (GPtrArray) out = g_ptr_array_new_with_free_func (candidate_free);
        g_autoptr (GError) local = NULL;
        g_autoptr (GDir) d = g_dir_open (cache, 0, &local);
        const char *entry;

        if (d == NULL) {
                if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
                        return g_steal_pointer (&out);
                g_propagate_prefixed_error (error, g_steal_pointer (&local), "%s: ", cache);
                return NULL;
        }
        while ((entry = g_dir_read_name (d)) != NULL) {
                const char *dash = strrchr (entry, '-');
                g_autofree char *img_name = NULL;
                g_autofree char *manifest = NULL;
                struct stat st;
                gboolean hex = dash != NULL && dash[1] != '\0';

                if (entry[0] == '.' || dash == NULL)
                        continue;
                for (const char *p = dash + 1; *p && hex; p++)
                        hex = g_ascii_isxdigit (*p);
                if (!hex)
                        continue;
                img_name = g_strndup (entry, dash - entry);
                if (!corral_image_name_is_valid (img_name) ||
                    (name != NULL && strcmp (img_name, name) != 0))
                        continue;
                manifest = g_build_filename (cache, entry, "manifest.json", NULL);
                if (lstat (manifest, &st) < 0)
                        continue;
                Candidate *c = g_new0 (Candidate, 1);
                c->dir = g_build_filename (cache, entry, NULL);
                c->name = g_steal_pointer (&img_name);
                c->mtime = (gint64) st.st_mtim.tv_sec * G_USEC_PER_SEC + st.st_mtim.tv_nsec / 1000;
                g_ptr_array_add (out, c);
        }
        g_ptr_array_sort (out, candidate_cmp);
        return g_steal_pointer (&out);
}

CorralImage *
corral_image_lookup (const char *name, GError **error)
{
        g_autoptr (GPtrArray) found = NULL;
        Candidate *newest;

        if (!check_name (name, error))
                return NULL;
        found = scan_cache (name, error);
        if (found == NULL)
                return NULL;
        if (found->len == 0) {
                g_autofree char *cache = corral_image_cache_dir ();
                if (corral_image_is_builtin (name))
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT,
                                     "the '%s' image is not built (nothing in %s); run "
                                     "`corralctl image build %s`",
                                     name, cache, name);
                else
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_NOT_BUILT,
                                     "the image '%s' is not on this computer (nothing in %s): "
                                     "import it with `corralctl image import FOLDER|TAR`, or "
                                     "build it with `corralctl image build --recipe FILE`",
                                     name, cache);
                return NULL;
        }
        /* The newest one only: an older image is not a silent fallback for a tampered one. */
        newest = g_ptr_array_index (found, 0);
        return corral_image_load_dir (name, newest->dir, error);
}

static guint64
dir_disk_usage (const char *dir)
{
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        const char *entry;
        guint64 total = 0;

        while (d != NULL && (entry = g_dir_read_name (d)) != NULL) {
                g_autofree char *path = g_build_filename (dir, entry, NULL);
                struct stat st;
                if (lstat (path, &st) == 0)
                        total += (guint64) st.st_blocks * 512;
        }
        return total;
}

/* "built" of the manifest, else the manifest's mtime. */
static gint64
built_time (const char *dir, gint64 mtime_usec)
{
        g_autofree char *path = g_build_filename (dir, "manifest.json", NULL);
        g_autofree char *text = NULL;
        gsize len = 0;
        struct stat st;

        if (lstat (path, &st) == 0 && S_ISREG (st.st_mode) &&
            st.st_size <= CORRAL_IMAGE_MANIFEST_MAX &&
            g_file_get_contents (path, &text, &len, NULL)) {
                g_autoptr (cJSON) root = cJSON_ParseWithLength (text, len);
                const char *built = root ? json_string (root, "built") : NULL;
                g_autoptr (GDateTime) dt =
                        built ? g_date_time_new_from_iso8601 (built, NULL) : NULL;
                if (dt != NULL)
                        return g_date_time_to_unix (dt);
        }
        return mtime_usec / G_USEC_PER_SEC;
}

GPtrArray *
corral_image_list (GError **error)
{
        g_autoptr (GPtrArray) found = scan_cache (NULL, error);
        g_autoptr (GPtrArray) out = NULL;

        if (found == NULL)
                return NULL;
        out = g_ptr_array_new_with_free_func ((GDestroyNotify) corral_image_info_free);
        for (guint i = 0; i < found->len; i++) {
                Candidate *c = g_ptr_array_index (found, i);
                g_autoptr (GError) local = NULL;
                g_autoptr (CorralImage) image = corral_image_load_dir (c->name, c->dir, &local);
                CorralImageInfo *info = g_new0 (CorralImageInfo, 1);

                info->name = g_strdup (c->name);
                info->dir = g_strdup (c->dir);
                info->size = dir_disk_usage (c->dir);
                info->built = built_time (c->dir, c->mtime);
                info->verified = image != NULL;
                info->problem = local ? g_strdup (local->message) : NULL;
                g_ptr_array_add (out, info);
        }
        return g_steal_pointer (&out);
}

char *
corral_image_find_builder (const char *name, GError **error)
{
        g_autofree char *script = NULL;
        g_autofree char *path = NULL;

        if (!check_name (name, error))
                return NULL;
        script = g_strconcat ("build-", name, NULL);
        path = g_build_filename (corral_paths_image_recipes (), "guest-image", name, script, NULL);
        if (!g_file_test (path, G_FILE_TEST_IS_EXECUTABLE)) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_BUILD,
                             "no builder for image '%s' (%s not found or not executable)", name,
                             path);
                return NULL;
        }
        return g_steal_pointer (&path);
}

/* build ----------------------------------------------------------------------------------- */

typedef struct {
        char *name; /* what the manifest must say, or NULL (a recipe's) */
        char *label; /* the image or recipe, for messages */
        GSubprocess *proc;
        GDataInputStream *err;
        GDataInputStream *out;
        CorralImageProgressFunc progress;
        gpointer progress_data;
        GQueue tail; /* last stderr lines */
        char *image_dir; /* last non-empty stdout line */
        int pending; /* stdout EOF, stderr EOF, wait */
        gboolean exited_ok;
        GError *wait_error;
        gulong cancel_id;
        guint kill_id;
        GCancellable *cancellable;
} Build;

static void
build_free (gpointer p)
{
        Build *b = p;

        if (b->cancel_id)
                g_cancellable_disconnect (b->cancellable, b->cancel_id);
        if (b->kill_id)
                g_source_remove (b->kill_id);
        g_clear_object (&b->cancellable);
        g_free (b->name);
        g_free (b->label);
        g_clear_object (&b->proc);
        g_clear_object (&b->err);
        g_clear_object (&b->out);
        g_queue_clear_full (&b->tail, g_free);
        g_free (b->image_dir);
        g_clear_error (&b->wait_error);
        g_free (b);
}

/* "[k/n] text" → fraction (k-1)/n (the step has started, not finished). */
static gboolean
parse_progress (const char *line, double *fraction, const char **text)
{
        char *end;
        guint64 k, n;

        if (line[0] != '[' || !g_ascii_isdigit (line[1]))
                return FALSE;
        k = g_ascii_strtoull (line + 1, &end, 10);
        if (*end != '/' || !g_ascii_isdigit (end[1]))
                return FALSE;
        n = g_ascii_strtoull (end + 1, &end, 10);
        if (end[0] != ']' || n == 0 || k == 0 || k > n)
                return FALSE;
        end++;
        while (*end == ' ')
                end++;
        *fraction = (double) (k - 1) / (double) n;
        *text = end;
        return TRUE;
}

static void build_step_done (GTask *task);

static void
kill_group (Build *b, int sig)
{
        const char *id = b->proc ? g_subprocess_get_identifier (b->proc) : NULL;

        if (id != NULL) {
                pid_t pid = (pid_t) g_ascii_strtoll (id, NULL, 10);
                if (pid > 1)
                        kill (-pid, sig); /* the builder leads its own process group */
        }
}

static gboolean
kill_hard_cb (gpointer data)
{
        Build *b = data;

        b->kill_id = 0;
        kill_group (b, SIGKILL);
        return G_SOURCE_REMOVE;
}

static void
cancelled_cb (GCancellable *cancellable, gpointer data)
{
        Build *b = data;

        /* SIGTERM lets the builder remove its temporary files; SIGKILL after 5 s. */
        kill_group (b, SIGTERM);
        if (b->kill_id == 0)
                b->kill_id = g_timeout_add_seconds (5, kill_hard_cb, b);
}

static void
read_err_cb (GObject *src, GAsyncResult *res, gpointer data)
{
        GTask *task = data;
        Build *b = g_task_get_task_data (task);
        g_autofree char *line = g_data_input_stream_read_line_finish_utf8 (
                G_DATA_INPUT_STREAM (src), res, NULL, NULL);
        double fraction;
        const char *text;

        if (line == NULL) {
                build_step_done (task);
                return;
        }
        g_strchomp (line);
        if (b->progress != NULL && parse_progress (line, &fraction, &text))
                b->progress (fraction, text, b->progress_data);
        g_queue_push_tail (&b->tail, g_strdup (line));
        while (b->tail.length > STDERR_TAIL_LINES)
                g_free (g_queue_pop_head (&b->tail));
        g_data_input_stream_read_line_async (b->err, G_PRIORITY_DEFAULT, NULL, read_err_cb, task);
}

static void
read_out_cb (GObject *src, GAsyncResult *res, gpointer data)
{
        GTask *task = data;
        Build *b = g_task_get_task_data (task);
        g_autofree char *line = g_data_input_stream_read_line_finish_utf8 (
                G_DATA_INPUT_STREAM (src), res, NULL, NULL);

        if (line == NULL) {
                build_step_done (task);
                return;
        }
        g_strstrip (line);
        if (line[0] != '\0') {
                g_free (b->image_dir);
                b->image_dir = g_steal_pointer (&line);
        }
        g_data_input_stream_read_line_async (b->out, G_PRIORITY_DEFAULT, NULL, read_out_cb, task);
}

static void
wait_cb (GObject *src, GAsyncResult *res, gpointer data)
{
        GTask *task = data;
        Build *b = g_task_get_task_data (task);

        b->exited_ok = g_subprocess_wait_check_finish (G_SUBPROCESS (src), res, &b->wait_error);
        build_step_done (task);
}

static void
build_step_done (GTask *task)
{
        Build *b = g_task_get_task_data (task);
        g_autoptr (GString) tail = NULL;
        GError *error = NULL;
        CorralImage *image;

        if (--b->pending > 0)
                return;
        if (g_cancellable_is_cancelled (b->cancellable)) {
                g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                         "building the '%s' image was cancelled", b->label);
                g_object_unref (task);
                return;
        }
        if (!b->exited_ok || b->image_dir == NULL) {
                tail = g_string_new (NULL);
                for (GList *l = b->tail.head; l != NULL; l = l->next)
                        g_string_append_printf (tail, "\n  %s", (char *) l->data);
                g_task_return_new_error (task, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_BUILD,
                                         "building the '%s' image failed (%s)%s%s", b->label,
                                         b->wait_error ? b->wait_error->message
                                                       : "the builder printed no image",
                                         tail->len ? "; the builder said:" : "", tail->str);
                g_object_unref (task);
                return;
        }
        image = corral_image_load_dir (b->name, b->image_dir, &error);
        if (image == NULL)
                g_task_return_error (task, error);
        else
                g_task_return_pointer (task, image, (GDestroyNotify) corral_image_free);
        g_object_unref (task);
}

static void
child_setup (gpointer data)
{
        setpgid (0, 0);
}

/* Runs BUILDER (with --recipe RECIPE when given) for the image LABEL names in messages; NAME is
 * what its manifest must say, or NULL for a recipe's own name. */
static void
build_spawn (GTask *task,
             const char *label,
             const char *name,
             const char *builder,
             const char *recipe,
             const char *agent_path,
             CorralImageProgressFunc progress,
             gpointer progress_data,
             GCancellable *cancellable)
{
        g_autoptr (GSubprocessLauncher) launcher = NULL;
        g_autoptr (GError) error = NULL;
        Build *b;

        if (agent_path == NULL || agent_path[0] == '\0')
                agent_path = corral_paths_helper (CORRAL_HELPER_AGENT);

        b = g_new0 (Build, 1);
        b->name = g_strdup (name);
        b->label = g_strdup (label);
        b->progress = progress;
        b->progress_data = progress_data;
        b->cancellable = cancellable ? g_object_ref (cancellable) : NULL;
        g_queue_init (&b->tail);
        g_task_set_task_data (task, b, build_free);
        g_task_set_return_on_cancel (task, FALSE);

        launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                              G_SUBPROCESS_FLAGS_STDERR_PIPE |
                                              G_SUBPROCESS_FLAGS_STDIN_INHERIT);
        g_subprocess_launcher_set_child_setup (launcher, child_setup, NULL, NULL);
        /* The guest's file client and proxy come from the same lookup as the agent, so an
         * installed Corral and a build tree each put their own in the image. */
        b->proc = g_subprocess_launcher_spawn (launcher, &error, builder, "--agent", agent_path,
                                               "--fs", corral_paths_helper (CORRAL_HELPER_FS),
                                               "--netproxy",
                                               corral_paths_helper (CORRAL_HELPER_NETPROXY),
                                               recipe ? "--recipe" : NULL, recipe, NULL);
        if (b->proc == NULL) {
                g_task_return_new_error (task, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_BUILD,
                                         "cannot run %s: %s", builder, error->message);
                g_object_unref (task);
                return;
        }
        b->err = g_data_input_stream_new (g_subprocess_get_stderr_pipe (b->proc));
        b->out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (b->proc));
        b->pending = 3;
        if (cancellable != NULL)
                b->cancel_id =
                        g_cancellable_connect (cancellable, G_CALLBACK (cancelled_cb), b, NULL);
        /* The task holds one reference for all three; build_step_done drops it at the end. */
        g_data_input_stream_read_line_async (b->err, G_PRIORITY_DEFAULT, NULL, read_err_cb, task);
        g_data_input_stream_read_line_async (b->out, G_PRIORITY_DEFAULT, NULL, read_out_cb, task);
        g_subprocess_wait_check_async (b->proc, NULL, wait_cb, task);
}

void
corral_image_build_async (const char *name,
                          const char *agent_path,
                          CorralImageProgressFunc progress,
                          gpointer progress_data,
                          GCancellable *cancellable,
                          GAsyncReadyCallback callback,
                          gpointer user_data)
{
        GTask *task = g_task_new (NULL, cancellable, callback, user_data);
        g_autoptr (GError) error = NULL;
        g_autofree char *builder = NULL;

        g_task_set_source_tag (task, corral_image_build_async);
        if (!check_name (name, &error)) {
                g_task_return_error (task, g_steal_pointer (&error));
                g_object_unref (task);
                return;
        }
        /* An organisation's image (imported, or built from its recipe) has no builder of its
         * name: it is used as it is, verified like any other. */
        if (!corral_image_is_builtin (name)) {
                CorralImage *image = corral_image_lookup (name, &error);

                if (image)
                        g_task_return_pointer (task, image, (GDestroyNotify) corral_image_free);
                else
                        g_task_return_error (task, g_steal_pointer (&error));
                g_object_unref (task);
                return;
        }
        builder = corral_image_find_builder (name, &error);
        if (builder == NULL) {
                g_task_return_error (task, g_steal_pointer (&error));
                g_object_unref (task);
                return;
        }
        build_spawn (task, name, name, builder, NULL, agent_path, progress, progress_data,
                     cancellable);
}

void
corral_image_build_recipe_async (const char *recipe,
                                 const char *agent_path,
                                 CorralImageProgressFunc progress,
                                 gpointer progress_data,
                                 GCancellable *cancellable,
                                 GAsyncReadyCallback callback,
                                 gpointer user_data)
{
        GTask *task = g_task_new (NULL, cancellable, callback, user_data);
        g_autoptr (GError) error = NULL;
        g_autofree char *builder = NULL;
        g_autofree char *base = NULL;

        g_task_set_source_tag (task, corral_image_build_async);
        builder = corral_image_find_builder ("standard", &error);
        if (builder == NULL) {
                g_task_return_error (task, g_steal_pointer (&error));
                g_object_unref (task);
                return;
        }
        base = g_path_get_basename (recipe);
        build_spawn (task, base, NULL, builder, recipe, agent_path, progress, progress_data,
                     cancellable);
}

CorralImage *
corral_image_build_finish (GAsyncResult *result, GError **error)
{
        g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
        return g_task_propagate_pointer (G_TASK (result), error);
}
