#
# ucx-spec autoconf glue.
#
# UCX's src/uct/configure.m4 includes this file (contrib/patches/
# 0001-uct-include-ucx-ext.patch) just before it records the compiled-in list
# of UCT modules: UCX 1.13.1 dlopens only modules named in that list, so a
# transport has to be added here rather than dropped into the module folder.
#

AC_MSG_CHECKING([whether to build the ucx-spec specrdv transport])
uct_modules="${uct_modules}:specrdv"
AC_CONFIG_FILES([src/uct/specrdv/Makefile])
AC_MSG_RESULT([yes])
