// The one source of a precompiled-header group's anchor target
// (cmake/pch.cmake): the target exists to build the group's PCH.
namespace dflash_pch_anchor {}  // NOLINT(modernize-concat-nested-namespaces)
