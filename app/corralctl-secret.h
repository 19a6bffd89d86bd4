/* corralctl-secret.h — `corralctl secret set|ls|rm`: Corral's secrets in the desktop keychain
 * (keychain-bridge/corral-secret-store.h). Values are read from standard input or a prompt
 * without echo, never from the command line; they are never printed.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* argv[0] is "secret". */
int corralctl_secret_main (int argc, char **argv);
