// Turning IDX arrays into tensors: the bytes are checked and converted on the host, then handed
// to kiln as input data in one copy each.
#include "frontend/data/dataset.h"

#include <vector>

#include "frontend/ops.h"
#include "runtime/error.h"

namespace kiln::data {

namespace {

// "[60000, 28, 28] ubyte", for messages.
std::string describe(const IdxArray& a) { return detail::concat(a.dims, " ", idx_type_name(a.type_code)); }

}  // namespace

Dataset load_idx_pair(const std::string& images_path, const std::string& labels_path, int64_t num_classes) {
  const IdxArray images = read_idx(images_path);
  KILN_CHECK(images.dims.size() == 3 && images.type_code == kIdxUByte, "load_idx_pair: ", images_path,
             ": expected images of rank 3, ubyte [N, H, W], got ", describe(images));
  const IdxArray labels = read_idx(labels_path);
  KILN_CHECK(labels.dims.size() == 1 && labels.type_code == kIdxUByte, "load_idx_pair: ", labels_path,
             ": expected labels of rank 1, ubyte [N], got ", describe(labels));
  KILN_CHECK(images.dims[0] == labels.dims[0], "load_idx_pair: ", images_path, " holds ", images.dims[0], " images ",
             images.dims, " but ", labels_path, " holds ", labels.dims[0], " labels ", labels.dims);

  const int64_t n = images.dims[0], height = images.dims[1], width = images.dims[2];
  std::vector<int64_t> label_values(labels.data.begin(), labels.data.end());
  for (int64_t i = 0; i < n; ++i)
    KILN_CHECK(label_values[i] >= 0 && label_values[i] < num_classes, "load_idx_pair: ", labels_path, ": label ",
               label_values[i], " at index ", i, " is outside [0, ", num_classes, ") (labels ", labels.dims, ")");

  // Pixels 0..255 become 0..1.
  std::vector<float> pixels(images.data.size());
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = float(images.data[i]) / 255.0f;

  Dataset out;
  out.images = tensor(pixels, kFloat).reshape({n, 1, height, width});
  out.labels = tensor(label_values, kLong);
  return out;
}

Dataset load_fashion_mnist(const std::string& dir, bool train) {
  const std::string split = train ? "train" : "t10k";
  const std::string images = find_idx_file(dir, split + "-images-idx3-ubyte");  // images first: the error names them
  const std::string labels = find_idx_file(dir, split + "-labels-idx1-ubyte");
  return load_idx_pair(images, labels);
}

}  // namespace kiln::data
