/* corralctl-opts.h — one way for every corralctl subcommand to read its options: GOptionContext
 * (so each has --help), and numbers parsed strictly, with an error that names the option.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

#include <glib.h>
#include <stdio.h>

G_BEGIN_DECLS

/* corralctl's own failures (a bad option, a missing VM, a failed build) exit with this: never
 * a status a command in the VM could have returned. */
#define CORRALCTL_EXIT_USAGE 125

/* Parses argc and argv (argv[0] is the subcommand's last word) against entries (NULL-terminated,
 * nullable) and leaves the positional arguments, argv[0] included. command is the full
 * command ("vm create"), parameter the positional arguments' shape ("NAME"), summary one
 * sentence. --help prints the usage and exits 0. On a bad option prints
 * "corralctl COMMAND: MESSAGE" and a hint to --help, and returns FALSE. */
gboolean corralctl_options_parse (const char *command,
                                  const char *parameter,
                                  const char *summary,
                                  const GOptionEntry *entries,
                                  int *argc,
                                  char ***argv);

/* Parses text (the value of option, e.g. "--memory") as a whole decimal number in [min, max]:
 * no sign, no space, no suffix, no overflow. On failure sets error naming option and range. */
gboolean corralctl_parse_uint (
        const char *option, const char *text, guint min, guint max, guint *ret, GError **error);

/* corralctl_parse_uint that prints "corralctl COMMAND: MESSAGE" on failure. */
gboolean corralctl_option_uint (const char *command,
                                const char *option,
                                const char *text,
                                guint min,
                                guint max,
                                guint *ret);

/* Prints "corralctl COMMAND: expected PARAMETER" and the hint to --help; returns
 * CORRALCTL_EXIT_USAGE. */
int corralctl_usage_error (const char *command, const char *parameter);

/* A subcommand of a group ("vm", "share", "net", "image"): its name, its positional arguments
 * ("" for none; translatable, N_()), how many, one sentence (N_()), and whether fewer will do. */
typedef struct {
        const char *name;
        const char *parameter;
        guint n_args;
        const char *summary;
        gboolean fewer_args; /* 0 to n_args positional arguments, the command checks which */
} CorralctlCommand;

/* The group's usage: its commands, then footer (nullable, translated). Returns 0 when out is
 * stdout (asked for with --help), else CORRALCTL_EXIT_USAGE. */
int corralctl_group_usage (FILE *out,
                           const char *group,
                           const CorralctlCommand *commands,
                           gsize n_commands,
                           const char *footer);

/* The command called name, or NULL after printing "unknown command" and the group's usage. */
const CorralctlCommand *corralctl_group_lookup (const char *group,
                                                const CorralctlCommand *commands,
                                                gsize n_commands,
                                                const char *name,
                                                const char *footer);

/* corralctl_options_parse for "GROUP NAME", then the count of positional arguments (left in
 * argv[1..]). FALSE after printing what is wrong. */
gboolean corralctl_command_parse (const char *group,
                                  const CorralctlCommand *command,
                                  const GOptionEntry *entries,
                                  int *argc,
                                  char ***argv);

G_END_DECLS
