/* corral-image-sign.c — Ed25519 signatures over image manifests (see the header).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corral-image-sign.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "corral-cjson.h"
#include "corral-glib-compat.h"
#include "corral-image.h"

#define KEY_BYTES 32
#define SIG_BYTES 64

/* GnuTLS's handles, freed with their owners' locals. */
typedef struct gnutls_privkey_st TlsPrivkey;
typedef struct gnutls_pubkey_st TlsPubkey;
typedef struct gnutls_x509_privkey_int TlsX509Privkey;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TlsPrivkey, gnutls_privkey_deinit)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TlsPubkey, gnutls_pubkey_deinit)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TlsX509Privkey, gnutls_x509_privkey_deinit)

static void
datum_clear (gnutls_datum_t *d)
{
        if (d->data) {
                explicit_bzero (d->data, d->size);
                gnutls_free (d->data);
        }
        d->data = NULL;
        d->size = 0;
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (gnutls_datum_t, datum_clear)

static gboolean
tls_failed (GError **error, const char *what, int r)
{
        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID, "%s: %s", what,
                     gnutls_strerror (r));
        return FALSE;
}

/* Strict base64 of exactly n bytes: decoding and encoding again gives the same text. */
static guchar *
base64_exact (const char *text, gsize n)
{
        g_autofree guchar *raw = NULL;
        g_autofree char *again = NULL;
        gsize len = 0;

        if (!text || strlen (text) != ((n + 2) / 3) * 4)
                return NULL;
        raw = g_base64_decode (text, &len);
        if (len != n)
                return NULL;
        again = g_base64_encode (raw, len);
        return g_str_equal (again, text) ? g_steal_pointer (&raw) : NULL;
}

/* The public key of a private key, in base64. */
static char *
public_b64 (gnutls_privkey_t key, GError **error)
{
        g_auto (gnutls_datum_t) x = { 0 };
        gnutls_ecc_curve_t curve;
        int r = gnutls_privkey_export_ecc_raw2 (key, &curve, &x, NULL, NULL, 0);

        if (r < 0) {
                tls_failed (error, _ ("Cannot read the public key"), r);
                return NULL;
        }
        if (curve != GNUTLS_ECC_CURVE_ED25519 || x.size != KEY_BYTES) {
                g_set_error_literal (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     _ ("The key is not an Ed25519 key"));
                return NULL;
        }
        return g_base64_encode (x.data, x.size);
}

char *
corral_image_keygen (const char *private_path, GError **error)
{
        g_autoptr (TlsX509Privkey) x509 = NULL;
        g_autoptr (TlsPrivkey) key = NULL;
        g_auto (gnutls_datum_t) pem = { 0 };
        g_autofd int fd = -1;
        g_autofree char *pub = NULL;
        int r;

        g_return_val_if_fail (private_path != NULL, NULL);
        if ((r = gnutls_x509_privkey_init (&x509)) < 0 ||
            (r = gnutls_x509_privkey_generate (x509, GNUTLS_PK_EDDSA_ED25519,
                                               GNUTLS_CURVE_TO_BITS (GNUTLS_ECC_CURVE_ED25519),
                                               0)) < 0 ||
            (r = gnutls_x509_privkey_export2_pkcs8 (x509, GNUTLS_X509_FMT_PEM, NULL,
                                                    GNUTLS_PKCS_PLAIN, &pem)) < 0 ||
            (r = gnutls_privkey_init (&key)) < 0 ||
            (r = gnutls_privkey_import_x509_raw (key, &pem, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
                tls_failed (error, _ ("Cannot make a key"), r);
                return NULL;
        }
        if (!(pub = public_b64 (key, error)))
                return NULL;
        /* Never over an existing key: losing one would orphan every image it signed. */
        fd = open (private_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0 || write (fd, pem.data, pem.size) != (ssize_t) pem.size || fsync (fd) < 0) {
                int errsv = errno;

                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                             _ ("Cannot write the private key %s: %s"), private_path,
                             g_strerror (errsv));
                if (fd >= 0)
                        g_unlink (private_path);
                return NULL;
        }
        return g_steal_pointer (&pub);
}

static gnutls_privkey_t
load_private (const char *path, GError **error)
{
        g_autoptr (TlsPrivkey) key = NULL;
        g_autofree char *text = NULL;
        gsize len = 0;
        gnutls_datum_t pem;
        int r;

        if (!g_file_get_contents (path, &text, &len, error))
                return NULL;
        pem.data = (unsigned char *) text;
        pem.size = (unsigned int) len;
        if ((r = gnutls_privkey_init (&key)) < 0 ||
            (r = gnutls_privkey_import_x509_raw (key, &pem, GNUTLS_X509_FMT_PEM, NULL, 0)) < 0) {
                explicit_bzero (text, len);
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             _ ("%s is not a private key: %s"), path, gnutls_strerror (r));
                return NULL;
        }
        explicit_bzero (text, len);
        return g_steal_pointer (&key);
}

char *
corral_image_sign (const char *dir, const char *private_path, GError **error)
{
        g_autoptr (TlsPrivkey) key = NULL;
        g_auto (gnutls_datum_t) sig = { 0 };
        g_autofree char *manifest_path = g_build_filename (dir, "manifest.json", NULL);
        g_autofree char *sig_path = g_build_filename (dir, "manifest.sig", NULL);
        g_autofree char *manifest = NULL, *pub = NULL, *sig_b64 = NULL, *text = NULL;
        g_autoptr (cJSON) root = cJSON_CreateObject ();
        gnutls_datum_t data;
        gsize len = 0;
        int r;

        g_return_val_if_fail (dir != NULL && private_path != NULL, NULL);
        if (!(key = load_private (private_path, error)) || !(pub = public_b64 (key, error)) ||
            !g_file_get_contents (manifest_path, &manifest, &len, error))
                return NULL;
        if (len > CORRAL_IMAGE_MANIFEST_MAX) {
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             _ ("%s is too large to be a manifest"), manifest_path);
                return NULL;
        }
        data.data = (unsigned char *) manifest;
        data.size = (unsigned int) len;
        if ((r = gnutls_privkey_sign_data2 (key, GNUTLS_SIGN_EDDSA_ED25519, 0, &data, &sig)) < 0) {
                tls_failed (error, _ ("Cannot sign the manifest"), r);
                return NULL;
        }
        sig_b64 = g_base64_encode (sig.data, sig.size);
        cJSON_AddStringToObject (root, "key", pub);
        cJSON_AddStringToObject (root, "signature", sig_b64);
        text = cJSON_Print (root);
        if (!g_file_set_contents_full (sig_path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT, 0644,
                                       error))
                return NULL;
        return g_steal_pointer (&pub);
}

/* Copies the regular files of from into to (no links, no folders: an image is flat). */
static gboolean
copy_files (const char *from, const char *to, GError **error)
{
        g_autoptr (GDir) d = g_dir_open (from, 0, error);
        const char *name;

        if (!d)
                return FALSE;
        while ((name = g_dir_read_name (d))) {
                g_autofree char *src = g_build_filename (from, name, NULL);
                g_autofree char *dst = g_build_filename (to, name, NULL);
                g_autoptr (GFile) s = g_file_new_for_path (src);
                g_autoptr (GFile) t = g_file_new_for_path (dst);

                if (!g_file_test (src, G_FILE_TEST_IS_REGULAR) ||
                    g_file_test (src, G_FILE_TEST_IS_SYMLINK))
                        continue;
                if (!g_file_copy (s, t, G_FILE_COPY_NOFOLLOW_SYMLINKS, NULL, NULL, NULL, error))
                        return FALSE;
        }
        return TRUE;
}

/* A folder of plain files, removed (an import that did not finish). */
static void
remove_flat (const char *dir)
{
        g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
        const char *name;

        while (d && (name = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (dir, name, NULL);
                g_unlink (path);
        }
        g_rmdir (dir);
}

/* A member name corral_image_export writes: a plain file name. */
static gboolean
member_name_is_plain (const char *name)
{
        if (!name[0] || g_str_equal (name, ".") || g_str_equal (name, "..") || strlen (name) > 128)
                return FALSE;
        for (const char *c = name; *c; c++)
                if (!g_ascii_isalnum (*c) && *c != '.' && *c != '_' && *c != '-')
                        return FALSE;
        return TRUE;
}

static gboolean
run_tar (const char *const *argv, char **out, GError **error)
{
        g_autofree char *err = NULL;
        int status = 0;

        if (!g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, out, &err,
                           &status, error))
                return FALSE;
        if (!g_spawn_check_wait_status (status, NULL)) {
                g_strstrip (err);
                g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                             _ ("tar failed: %s"), err[0] ? err : _ ("no message"));
                return FALSE;
        }
        return TRUE;
}

/* Unpacks tar into the empty folder into, after checking that every member is a regular file
 * with a plain name (tar -tv: type letter first, the name last). */
static gboolean
unpack_tar (const char *tar, const char *into, GError **error)
{
        const char *list[] = {
                "tar",    "--list", "--verbose", "--numeric-owner", "--quoting-style=escape",
                "--file", tar,      NULL
        };
        const char *extract[] = { "tar",    "--extract", "--no-same-owner", "--no-same-permissions",
                                  "--file", tar,         "--directory",     into,
                                  NULL };
        g_autofree char *out = NULL;
        g_auto (GStrv) lines = NULL;
        guint n = 0;

        if (!run_tar (list, &out, error))
                return FALSE;
        lines = g_strsplit (out, "\n", -1);
        for (guint i = 0; lines[i]; i++) {
                g_auto (GStrv) fields = NULL;

                if (!lines[i][0])
                        continue;
                /* "-rw-r--r-- 0/0 SIZE DATE TIME NAME": six words, the name one of them */
                const char *name = "";
                guint nf = 0;

                fields = g_strsplit_set (lines[i], " ", -1);
                for (guint j = 0; fields[j]; j++)
                        if (fields[j][0] && ++nf == 6)
                                name = fields[j];
                if (nf != 6)
                        name = "";
                /* tar -C DIR . writes "./" and "./NAME" */
                if (lines[i][0] == 'd' && g_str_equal (name, "./"))
                        continue;
                if (g_str_has_prefix (name, "./"))
                        name += 2;
                if (lines[i][0] != '-' || !member_name_is_plain (name) || ++n > 16) {
                        g_set_error (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     _ ("%s is not an image archive: it holds “%s”, and an image "
                                        "is at most 16 plain files (corralctl image export)"),
                                     tar, lines[i]);
                        return FALSE;
                }
        }
        return run_tar (extract, NULL, error);
}

CorralImage *
corral_image_import (const char *path, GError **error)
{
        g_autoptr (CorralImage) checked = NULL;
        g_autofree char *cache = corral_image_cache_dir ();
        g_autofree char *final = NULL, *tmp = NULL, *leaf = NULL, *unpacked = NULL;
        struct stat st;

        if (stat (path, &st) == 0 && S_ISREG (st.st_mode)) {
                unpacked = g_build_filename (cache, ".unpack-XXXXXX", NULL);
                if (g_mkdir_with_parents (cache, 0700) < 0 || !g_mkdtemp_full (unpacked, 0700)) {
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                                     _ ("Cannot make a folder in %s: %s"), cache,
                                     g_strerror (errno));
                        return NULL;
                }
                if (!unpack_tar (path, unpacked, error)) {
                        remove_flat (unpacked);
                        return NULL;
                }
                checked = corral_image_load_dir (NULL, unpacked, error);
        } else {
                checked = corral_image_load_dir (NULL, path, error);
        }
        if (!checked) {
                if (unpacked)
                        remove_flat (unpacked);
                return NULL;
        }
        /* NAME-HEX, as the builders name theirs (scan_cache): the manifest's own hash. */
        leaf = g_strdup_printf ("%s-%.16s", checked->name, checked->manifest_sha256);
        final = g_build_filename (cache, leaf, NULL);
        if (g_file_test (final, G_FILE_TEST_IS_DIR)) {
                if (unpacked)
                        remove_flat (unpacked);
                return corral_image_load_dir (checked->name, final, error);
        }
        if (unpacked) {
                /* Unpacked in the store already: verified there, moved into place. */
                tmp = g_steal_pointer (&unpacked);
                if (g_chmod (tmp, 0755) < 0 || g_rename (tmp, final) < 0) {
                        int errsv = errno;

                        remove_flat (tmp);
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                                     _ ("Cannot import the image into %s: %s"), final,
                                     g_strerror (errsv));
                        return NULL;
                }
                return corral_image_load_dir (checked->name, final, error);
        }
        tmp = g_build_filename (cache, ".import-XXXXXX", NULL);
        if (g_mkdir_with_parents (cache, 0700) < 0 || !g_mkdtemp_full (tmp, 0755)) {
                g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errno),
                             _ ("Cannot make a folder in %s: %s"), cache, g_strerror (errno));
                return NULL;
        }
        if (!copy_files (checked->dir, tmp, error) || g_rename (tmp, final) < 0) {
                int errsv = errno;

                remove_flat (tmp);
                if (error && !*error)
                        g_set_error (error, G_IO_ERROR, g_io_error_from_errno (errsv),
                                     _ ("Cannot import the image into %s: %s"), final,
                                     g_strerror (errsv));
                return NULL;
        }
        /* What was copied is what boots: verified again, from the copy. */
        return corral_image_load_dir (checked->name, final, error);
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
        return strcmp (*(char *const *) a, *(char *const *) b);
}

gboolean
corral_image_export (const char *dir, const char *tar_path, GError **error)
{
        static const char *const head[] = { "tar",        "--create",  "--numeric-owner",
                                            "--owner=0",  "--group=0", "--mode=0644",
                                            "--directory" };
        g_autoptr (GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
        g_autoptr (GDir) d = g_dir_open (dir, 0, error);
        g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
        const char *name;

        if (!d)
                return FALSE;
        while ((name = g_dir_read_name (d))) {
                g_autofree char *path = g_build_filename (dir, name, NULL);
                struct stat st;

                if (lstat (path, &st) == 0 && S_ISREG (st.st_mode) && member_name_is_plain (name))
                        g_ptr_array_add (names, g_strdup (name));
        }
        g_ptr_array_sort (names, compare_names);
        for (guint i = 0; i < G_N_ELEMENTS (head); i++)
                g_ptr_array_add (argv, g_strdup (head[i]));
        g_ptr_array_add (argv, g_strdup (dir));
        g_ptr_array_add (argv, g_strdup ("--file"));
        g_ptr_array_add (argv, g_strdup (tar_path));
        g_ptr_array_add (argv, g_strdup ("--"));
        for (guint i = 0; i < names->len; i++)
                g_ptr_array_add (argv, g_strdup (g_ptr_array_index (names, i)));
        g_ptr_array_add (argv, NULL);
        return run_tar ((const char *const *) argv->pdata, NULL, error);
}

char *
corral_image_signature_check (const char *manifest,
                              gsize manifest_len,
                              const char *signature,
                              gsize signature_len,
                              GError **error)
{
        g_autoptr (cJSON) root = NULL;
        g_autoptr (TlsPubkey) pub = NULL;
        g_autofree guchar *key = NULL, *sig = NULL;
        const char *key_b64, *sig_b64;
        gnutls_datum_t x, s, data;
        int r;

        if (signature_len > CORRAL_IMAGE_SIGNATURE_MAX || memchr (signature, '\0', signature_len) ||
            !(root = cJSON_ParseWithLength (signature, signature_len)) || !cJSON_IsObject (root) ||
            !(key = base64_exact (key_b64 = cJSON_GetStringValue (
                                          cJSON_GetObjectItemCaseSensitive (root, "key")),
                                  KEY_BYTES)) ||
            !(sig = base64_exact (sig_b64 = cJSON_GetStringValue (
                                          cJSON_GetObjectItemCaseSensitive (root, "signature")),
                                  SIG_BYTES))) {
                g_set_error_literal (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_INVALID,
                                     _ ("The image’s signature (manifest.sig) is malformed"));
                return NULL;
        }
        x.data = key;
        x.size = KEY_BYTES;
        s.data = sig;
        s.size = SIG_BYTES;
        data.data = (unsigned char *) manifest;
        data.size = (unsigned int) manifest_len;
        if ((r = gnutls_pubkey_init (&pub)) < 0 ||
            (r = gnutls_pubkey_import_ecc_raw (pub, GNUTLS_ECC_CURVE_ED25519, &x, NULL)) < 0) {
                tls_failed (error, _ ("The image’s signing key cannot be read"), r);
                return NULL;
        }
        if (gnutls_pubkey_verify_data2 (pub, GNUTLS_SIGN_EDDSA_ED25519, 0, &data, &s) < 0) {
                g_set_error_literal (error, CORRAL_IMAGE_ERROR, CORRAL_IMAGE_ERROR_TAMPERED,
                                     _ ("The image’s signature does not match its manifest: "
                                        "it was changed after it was signed"));
                return NULL;
        }
        return g_strdup (key_b64);
}
