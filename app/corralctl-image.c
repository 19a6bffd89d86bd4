/* corralctl-image.c — `corralctl image build NAME | build --recipe FILE | verify NAME | ls |
 * keygen FILE | sign NAME --key FILE | export NAME TAR | import DIR|TAR`.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "corralctl-image.h"

#include "corral-image-sign.h"
#include "corral-image.h"
#include "corralctl-opts.h"

#include <glib-unix.h>
#include <glib/gi18n.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const CorralctlCommand image_commands[] = {
        { "build", N_ ("NAME | --recipe FILE"), 1,
          N_ ("Build a guest image, or reuse the one built from the same inputs; with --recipe, "
              "your organisation’s image"),
          TRUE },
        { "verify", N_ ("NAME"), 1, N_ ("Check a built image against its manifest") },
        { "ls", "", 0, N_ ("List the built images") },
        { "keygen", N_ ("PRIVATE-KEY-FILE"), 1,
          N_ ("Make a key pair to sign your organisation’s images; prints the public key") },
        { "sign", N_ ("NAME"), 1, N_ ("Sign a built image’s manifest (with --key)") },
        { "export", N_ ("NAME TAR-FILE"), 2,
          N_ ("Write a built image (with its signature) to one file, for image import") },
        { "import", N_ ("DIR|TAR-FILE"), 1,
          N_ ("Verify an image folder or exported file (and its signature, when the policy "
              "asks) and add it to the images") },
};

static const char *
image_footer (void)
{
        return _ ("NAME: minimal, standard, or the name of an image your organisation built "
                  "from a recipe or imported. Images are kept in "
                  "${XDG_CACHE_HOME:-~/.cache}/corral/images.");
}

typedef struct {
        GMainLoop *loop;
        CorralImage *image;
        GError *error;
        gboolean tty;
        gboolean open_line;
} BuildCtl;

static void
progress_cb (double fraction, const char *text, gpointer data)
{
        BuildCtl *b = data;

        if (b->tty) {
                fprintf (stderr, "\r\033[K[%3d%%] %s", (int) (fraction * 100 + 0.5), text);
                b->open_line = TRUE;
        } else {
                fprintf (stderr, "[%3d%%] %s\n", (int) (fraction * 100 + 0.5), text);
        }
        fflush (stderr);
}

static void
build_done (GObject *src, GAsyncResult *res, gpointer data)
{
        BuildCtl *b = data;

        b->image = corral_image_build_finish (res, &b->error);
        g_main_loop_quit (b->loop);
}

static gboolean
interrupted_cb (gpointer data)
{
        g_cancellable_cancel (data);
        return G_SOURCE_CONTINUE;
}

static void
print_image (const CorralImage *image)
{
        printf ("%s\n", image->dir);
        fprintf (stderr, "  kernel:  %s\n  initrd:  %s\n", image->kernel, image->initrd);
        if (image->disk)
                fprintf (stderr, "  disk:    %s (base: boot on a qcow2 overlay)\n", image->disk);
        fprintf (stderr, "  cmdline: %s\n", image->cmdline);
}

static int
cmd_build (const char *name, const char *recipe, const char *agent)
{
        g_autoptr (GCancellable) cancellable = g_cancellable_new ();
        BuildCtl b = { 0 };
        guint sigint, sigterm;
        gint64 start = g_get_monotonic_time ();

        b.loop = g_main_loop_new (NULL, FALSE);
        b.tty = isatty (STDERR_FILENO);
        sigint = g_unix_signal_add (SIGINT, interrupted_cb, cancellable);
        sigterm = g_unix_signal_add (SIGTERM, interrupted_cb, cancellable);
        if (recipe) {
                fprintf (stderr, "building the image of the recipe %s...\n", recipe);
                corral_image_build_recipe_async (recipe, agent, progress_cb, &b, cancellable,
                                                 build_done, &b);
        } else {
                fprintf (stderr, "building the '%s' image...\n", name);
                corral_image_build_async (name, agent, progress_cb, &b, cancellable, build_done,
                                          &b);
        }
        g_main_loop_run (b.loop);
        g_source_remove (sigint);
        g_source_remove (sigterm);
        g_main_loop_unref (b.loop);
        if (b.open_line)
                fputc ('\n', stderr);
        if (b.image == NULL) {
                fprintf (stderr, "corralctl: %s\n", b.error->message);
                g_error_free (b.error);
                return CORRALCTL_EXIT_USAGE;
        }
        fprintf (stderr, "image '%s' ready in %.1f s:\n", b.image->name,
                 (g_get_monotonic_time () - start) / (double) G_USEC_PER_SEC);
        print_image (b.image);
        corral_image_free (b.image);
        return 0;
}

static int
cmd_verify (const char *name)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = corral_image_lookup (name, &error);

        if (image == NULL) {
                fprintf (stderr, "corralctl: %s\n", error->message);
                return CORRALCTL_EXIT_USAGE;
        }
        fprintf (stderr, "image '%s' verified (manifest sha256 %s):\n", name,
                 image->manifest_sha256);
        print_image (image);
        return 0;
}

static int
cmd_ls (void)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (GPtrArray) list = corral_image_list (&error);
        g_autofree char *cache = corral_image_cache_dir ();

        if (list == NULL) {
                fprintf (stderr, "corralctl: %s\n", error->message);
                return CORRALCTL_EXIT_USAGE;
        }
        if (list->len == 0) {
                fprintf (stderr, "no images in %s; run `corralctl image build minimal`\n", cache);
                return 0;
        }
        printf ("%-12s %-20s %9s %-8s %s\n", "NAME", "BUILT", "SIZE", "VERIFIED", "DIRECTORY");
        for (guint i = 0; i < list->len; i++) {
                CorralImageInfo *info = g_ptr_array_index (list, i);
                g_autoptr (GDateTime) dt = g_date_time_new_from_unix_local (info->built);
                g_autofree char *when = dt ? g_date_time_format (dt, "%Y-%m-%d %H:%M") : NULL;
                g_autofree char *size = g_format_size (info->size);

                printf ("%-12s %-20s %9s %-8s %s\n", info->name, when ? when : "?", size,
                        info->verified ? "yes" : "NO", info->dir);
                if (!info->verified && info->problem)
                        printf ("    %s\n", info->problem);
        }
        return 0;
}

static int
fail (GError *error)
{
        fprintf (stderr, "corralctl: %s\n", error->message);
        return CORRALCTL_EXIT_USAGE;
}

static int
cmd_keygen (const char *path)
{
        g_autoptr (GError) error = NULL;
        g_autofree char *pub = corral_image_keygen (path, &error);

        if (!pub)
                return fail (error);
        fprintf (stderr, _ ("Private key written to %s (keep it safe: it signs images).\n"), path);
        fprintf (stderr, _ ("Public key, for images.trustedKeys in the managed policy:\n"));
        printf ("%s\n", pub);
        return 0;
}

static int
cmd_sign (const char *name, const char *key)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;
        g_autofree char *pub = NULL;

        if (!key) {
                g_printerr (_ ("corralctl image sign: --key PRIVATE-KEY-FILE is needed\n"));
                return CORRALCTL_EXIT_USAGE;
        }
        /* Only what verifies is signed: the signature vouches for these artifacts. */
        if (!(image = corral_image_lookup (name, &error)) ||
            !(pub = corral_image_sign (image->dir, key, &error)))
                return fail (error);
        fprintf (stderr, _ ("Signed the image “%s” (%s) with the key %s\n"), name, image->dir, pub);
        return 0;
}

static int
cmd_export (const char *name, const char *tar)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = NULL;

        /* Only what verifies leaves: the archive is what the signature vouches for. */
        if (!(image = corral_image_lookup (name, &error)) ||
            !corral_image_export (image->dir, tar, &error))
                return fail (error);
        fprintf (stderr, _ ("Wrote the image “%s” (%s) to %s\n"), name, image->dir, tar);
        return 0;
}

static int
cmd_import (const char *dir)
{
        g_autoptr (GError) error = NULL;
        g_autoptr (CorralImage) image = corral_image_import (dir, &error);

        if (!image)
                return fail (error);
        fprintf (stderr, _ ("Imported the image “%s”:\n"), image->name);
        print_image (image);
        return 0;
}

int
corralctl_image_main (int argc, char **argv)
{
        g_autofree char *agent = NULL, *key = NULL;
        g_autofree char *recipe = NULL;
        const GOptionEntry build_entries[] = {
                { "recipe", 0, 0, G_OPTION_ARG_FILENAME, &recipe,
                  N_ ("Build your organisation’s image from this recipe: the standard image "
                      "plus its Debian packages, files and CA certificates"),
                  N_ ("FILE") },
                { "agent", 0, 0, G_OPTION_ARG_FILENAME, &agent,
                  N_ ("The corral-agent to put in the image (default: the one that came with "
                      "corralctl)"),
                  N_ ("PATH") },
                G_OPTION_ENTRY_NULL
        };
        const GOptionEntry sign_entries[] = {
                { "key", 0, 0, G_OPTION_ARG_FILENAME, &key,
                  N_ ("The private key to sign with (corralctl image keygen)"), N_ ("FILE") },
                G_OPTION_ENTRY_NULL
        };
        const CorralctlCommand *command;
        const char *name;

        /* "list" is what earlier versions took for "ls". */
        if (argc > 1 && g_str_equal (argv[1], "list"))
                argv[1] = (char *) "ls";
        if (argc < 2 || g_str_equal (argv[1], "--help") || g_str_equal (argv[1], "-h"))
                return corralctl_group_usage (argc < 2 ? stderr : stdout, "image", image_commands,
                                              G_N_ELEMENTS (image_commands), image_footer ());
        if (!(command = corralctl_group_lookup ("image", image_commands,
                                                G_N_ELEMENTS (image_commands), argv[1],
                                                image_footer ())))
                return CORRALCTL_EXIT_USAGE;
        argc--;
        argv++;
        if (!corralctl_command_parse ("image", command,
                                      g_str_equal (command->name, "build")  ? build_entries
                                      : g_str_equal (command->name, "sign") ? sign_entries
                                                                            : NULL,
                                      &argc, &argv))
                return CORRALCTL_EXIT_USAGE;
        if (g_str_equal (command->name, "ls"))
                return cmd_ls ();
        if (g_str_equal (command->name, "keygen"))
                return cmd_keygen (argv[1]);
        if (g_str_equal (command->name, "import"))
                return cmd_import (argv[1]);
        if (g_str_equal (command->name, "build") && (argc == 2) == (recipe != NULL)) {
                g_printerr (_ ("corralctl image build: give an image NAME or --recipe FILE (one "
                               "of them)\n"));
                return CORRALCTL_EXIT_USAGE;
        }
        if (recipe)
                return cmd_build (NULL, recipe, agent);
        name = argv[1];
        if (!corral_image_name_is_valid (name)) {
                g_printerr (_ ("corralctl image %s: “%s” is not an image name (lowercase "
                               "letters, digits, - and _)\n"),
                            command->name, name);
                return CORRALCTL_EXIT_USAGE;
        }
        if (g_str_equal (command->name, "build") && !corral_image_is_builtin (name)) {
                g_printerr (_ ("corralctl image build: Corral builds “minimal”, “standard” and "
                               "“desktop”; "
                               "your organisation’s image “%s” is built with --recipe FILE or "
                               "added with image import\n"),
                            name);
                return CORRALCTL_EXIT_USAGE;
        }
        if (g_str_equal (command->name, "build"))
                return cmd_build (name, NULL, agent);
        if (g_str_equal (command->name, "export"))
                return cmd_export (name, argv[2]);
        if (g_str_equal (command->name, "sign"))
                return cmd_sign (name, key);
        return cmd_verify (name);
}
