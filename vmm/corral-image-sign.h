/* corral-image-sign.h — Ed25519 signatures over a guest image's manifest (GnuTLS), for the
 * organisation's own images (issue 22): IT signs the manifest.json of an image it built, and
 * the managed policy names the public keys it trusts (images.trustedKeys) and may require a
 * signature (images.requireSigned). The manifest lists the sha256 of every artifact, so a
 * signature over its bytes covers the whole image.
 *
 * The signature is manifest.sig beside manifest.json:
 *   {"key": BASE64 (the 32-byte public key), "signature": BASE64 (64 bytes)}
 * A private key is a PKCS#8 PEM file (0600), as `openssl genpkey -algorithm ed25519` writes.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <gio/gio.h>

#include "corral-image.h"

G_BEGIN_DECLS

/* Largest manifest.sig read. */
#define CORRAL_IMAGE_SIGNATURE_MAX 4096

/* A new key pair: the private key written to private_path (created 0600, never over an
 * existing file), the public key returned in base64 (transfer full). */
char *corral_image_keygen (const char *private_path, GError **error);

/* Signs dir's manifest.json with the key in private_path: writes manifest.sig. Returns the
 * public key in base64 (transfer full). The image is not verified here: verify it first. */
char *corral_image_sign (const char *dir, const char *private_path, GError **error);

/* Whether signature (the text of a manifest.sig) is a valid signature of manifest (its bytes).
 * Returns the signing key in base64 (transfer full), or NULL with CORRAL_IMAGE_ERROR_TAMPERED
 * (does not verify) or _INVALID (malformed). */
char *corral_image_signature_check (const char *manifest,
                                    gsize manifest_len,
                                    const char *signature,
                                    gsize signature_len,
                                    GError **error);

/* Copies the image in path (verified first: its manifest, its artifacts and, when the policy
 * asks, its signature) into the image store as NAME-SHA (SHA: the start of its manifest's
 * sha256), where corral_image_lookup finds it as the newest image of its name. path is a
 * folder, or a tar archive (corral_image_export) of plain files without folders: anything else
 * in it (a link, a folder, a device, a name with "/") refuses the whole archive before a byte
 * is unpacked. Regular files only; the copy is verified again before it is handed out.
 * (transfer full) */
CorralImage *corral_image_import (const char *path, GError **error);

/* Writes the image in dir (its manifest, signature and artifacts: the regular files there) to
 * a tar archive at tar_path, for corral_image_import on another computer. */
gboolean corral_image_export (const char *dir, const char *tar_path, GError **error);

G_END_DECLS
