/* corralctl-image.h — `corralctl image build|verify|ls`.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#pragma once

/* ARGV[0] is "image". Returns the exit status: 0 ok, 1 failure (not built, tampered, build
 * failed), 2 bad usage. */
int corralctl_image_main (int argc, char **argv);
