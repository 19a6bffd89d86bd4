/* corral-image.h — the guest image store: find, verify and build guest images.
 *
 * Images live in ${XDG_CACHE_HOME:-$HOME/.cache}/corral/images/NAME-HASH/, each with a
 * manifest.json listing the sha256 of every artifact (see guest-image/minimal/README.md). An
 * image is only handed out after every artifact was re-hashed against its manifest, and, when
 * the organisation's policy asks for it, after that manifest's signature was checked against
 * the keys it trusts (corral-image-sign.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CORRAL_IMAGE_ERROR (corral_image_error_quark ())

typedef enum {
        CORRAL_IMAGE_ERROR_NOT_BUILT, /* no built image of that name: run `corralctl image build` */
        CORRAL_IMAGE_ERROR_TAMPERED, /* an artifact is missing or its sha256 differs */
        CORRAL_IMAGE_ERROR_INVALID, /* bad name, or a malformed / oversized manifest */
        CORRAL_IMAGE_ERROR_BUILD, /* the builder failed (message ends with its last lines) */
        /* the organisation's policy wants it signed by a key it trusts, and it is not
         * (images.requireSigned, images.trustedKeys; corral-image-sign.h) */
        CORRAL_IMAGE_ERROR_UNTRUSTED,
} CorralImageError;

GQuark corral_image_error_quark (void);

/* Largest manifest.json accepted. */
#define CORRAL_IMAGE_MANIFEST_MAX (256 * 1024)

typedef struct {
        char *name; /* "minimal", "standard", "desktop", or an organisation's */
        char *dir; /* absolute image directory */
        char *kernel; /* absolute path */
        char *initrd; /* absolute path */
        char *disk; /* qcow2 base image (absolute) or NULL; never write it: overlay */
        char *cmdline; /* kernel command line to boot with */
        char *manifest_sha256; /* sha256 of manifest.json as verified */
        char *stamp; /* the image folder's files as verified (corral_image_recheck) */
} CorralImage;

void corral_image_free (CorralImage *image);
CorralImage *corral_image_copy (const CorralImage *image);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralImage, corral_image_free)

/* ${XDG_CACHE_HOME:-$HOME/.cache}/corral/images (read from the environment on every call). */
char *corral_image_cache_dir (void);

/* TRUE for a valid image name: 1-64 of [a-z0-9_-], starting with a letter or digit. */
gboolean corral_image_name_is_valid (const char *name);

/* TRUE for Corral's own images, which have a builder: "minimal", "standard", "desktop". Any other name
 * is an organisation's image, imported or built from its recipe. */
gboolean corral_image_is_builtin (const char *name);

/* The newest built image NAME, verified against its manifest. */
CorralImage *corral_image_lookup (const char *name, GError **error);

/* Whether image, verified earlier and kept (a workspace made ready ahead), may still be used:
 * its folder's files are the ones verified (device, inode, size, times), else it is verified
 * again in full; and the organisation's policy, read again, still trusts its signature (M9). */
gboolean corral_image_recheck (const CorralImage *image, GError **error);

/* Load and verify the image in DIR (its manifest must say it is NAME; NAME may be NULL). */
CorralImage *corral_image_load_dir (const char *name, const char *dir, GError **error);

/* Path of the builder script for NAME: corral_paths_image_recipes()/guest-image/NAME/build-NAME
 * ($CORRAL_SOURCE_DIR, the source tree of a build tree, or DATADIR/corral when installed). NULL
 * with a BUILD error when there is none. */
char *corral_image_find_builder (const char *name, GError **error);

/* FRACTION in [0, 1] (or < 0 when unknown), TEXT the builder's step line without "[k/n] ". */
typedef void (*CorralImageProgressFunc) (double fraction, const char *text, gpointer user_data);

/* Run the builder of NAME (it reuses a cached image when nothing changed); an organisation's
 * image (!corral_image_is_builtin) is not built but looked up (corral_image_lookup). AGENT_PATH is the
 * corral-agent binary to put in the image (NULL: corral_paths_helper's); corral-fs and
 * corral-netproxy come from corral_paths_helper. PROGRESS is called in the
 * calling thread's main context for every "[k/n] ..." line. Cancelling kills the builder. */
void corral_image_build_async (const char *name,
                               const char *agent_path,
                               CorralImageProgressFunc progress,
                               gpointer progress_data,
                               GCancellable *cancellable,
                               GAsyncReadyCallback callback,
                               gpointer user_data);
/* An organisation's image from RECIPE (a JSON file; guest-image/standard/README.md, "Recipes"):
 * the standard builder with --recipe, named as the recipe says. Otherwise as above; finish with
 * corral_image_build_finish. */
void corral_image_build_recipe_async (const char *recipe,
                                      const char *agent_path,
                                      CorralImageProgressFunc progress,
                                      gpointer progress_data,
                                      GCancellable *cancellable,
                                      GAsyncReadyCallback callback,
                                      gpointer user_data);
/* The built (or cached) image, loaded with corral_image_load_dir: its manifest verified. */
CorralImage *corral_image_build_finish (GAsyncResult *result, GError **error);

typedef struct {
        char *name;
        char *dir;
        guint64 size; /* bytes on disk */
        gint64 built; /* unix time */
        gboolean verified;
        char *problem; /* why it did not verify, or NULL */
} CorralImageInfo;

void corral_image_info_free (CorralImageInfo *info);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (CorralImageInfo, corral_image_info_free)

/* Every image in the cache (CorralImageInfo *), sorted by name then newest first; each one is
 * verified (which reads every artifact). An empty array when there is no cache yet. */
GPtrArray *corral_image_list (GError **error);

G_END_DECLS
