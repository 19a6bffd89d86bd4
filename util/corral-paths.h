/* corral-paths.h — where Corral's own files are: its helper programs, image recipes and data.
 *
 * Every program that starts a helper (corral-fsd, corral-egressd, corral-chanbridge) or puts
 * one in an image (corral-agent, corral-fs, corral-netproxy) asks here, so an installed
 * Corral and a build tree find the same things the same way, with no environment variables:
 *
 *  1. $CORRAL_<NAME>_PATH when set and not empty (NAME: the helper without "corral-", in
 *     capitals, e.g. CORRAL_FSD_PATH): for tests and for packagers who move a helper;
 *  2. when the running program is inside the build tree it was built in (its /proc/self/exe
 *     lies below that tree): the helper where that same tree builds it;
 *  3. otherwise the configured install location: LIBEXECDIR/corral/NAME for helpers,
 *     DATADIR/corral for the image recipes, and the schema and locale folders of the prefix.
 *
 * A build tree and an installed copy never mix: an installed program never looks into a
 * build tree, and a program in a build tree never runs an installed helper.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The helper programs Corral looks up; anything else is a programmer error. */
#define CORRAL_HELPER_AGENT "corral-agent"
#define CORRAL_HELPER_FS "corral-fs"
#define CORRAL_HELPER_FSD "corral-fsd"
#define CORRAL_HELPER_EGRESSD "corral-egressd"
#define CORRAL_HELPER_NETPROXY "corral-netproxy"
#define CORRAL_HELPER_CHANBRIDGE "corral-chanbridge"

/* TRUE when the running program is in the build tree it was built in. Decided once. */
gboolean corral_paths_in_build_tree (void);

/* Path of the helper NAME (one of CORRAL_HELPER_*), by the order above. Never NULL; the file
 * may not exist (the caller's error names the path). The string is interned: do not free. */
const char *corral_paths_helper (const char *name);

/* The folder that holds the image builders with their data (guest-image/NAME/build-NAME for
 * minimal, standard and desktop): $CORRAL_SOURCE_DIR, else the source tree (in a build tree),
 * else DATADIR/corral. Interned: do not free. */
const char *corral_paths_image_recipes (void);

/* Where the compiled GSettings schema of this Corral is: the build tree's data/ folder, or
 * the prefix's share/glib-2.0/schemas. */
const char *corral_paths_schema_dir (void);

/* Where the translations are: the build tree's po/ folder, or the prefix's locale folder. */
const char *corral_paths_locale_dir (void);

/* The same lookups as if the running program were EXE (for tests: EXE may be a path that is
 * not in the build tree, to see what an installed program would pick). Interned. */
const char *_corral_paths_helper_for (const char *name, const char *exe);
const char *_corral_paths_image_recipes_for (const char *exe);

G_END_DECLS
