// The default task set of `ember gate`: short texts written for ember (free
// to use, no source), plain English in the simple style small story models
// are trained on, with dialogue, numbers and a list, so perplexity, KL and
// top-1 agreement see more than one register. A real release gate should
// pass --tasks with texts from the deployment's own domain.
#include "tools/ember/gate_tasks.h"

namespace ember::cli {

const std::vector<GateText>& default_gate_texts() {
  static const std::vector<GateText> texts = {
      {"builtin:garden",
       "Once upon a time, there was a little boy named Tom. Tom had a small garden behind his house. Every morning "
       "he gave water to his flowers and said hello to the bees. One day, Tom saw that a red flower was sad and "
       "bent. He asked his mom, \"Why is my flower sad?\" His mom smiled and said, \"It needs more sun.\" Tom "
       "moved the pot to the window. The next day the flower stood up tall and bright. Tom was very happy. He "
       "learned that every living thing needs care, and he never forgot to look after his garden again.\n"},
      {"builtin:rain",
       "Lily and her dog Max went to the park. The sky was blue and the wind was soft. They played with a big "
       "ball and ran around the old tree. Then dark clouds came and it began to rain. Lily was scared of the "
       "loud thunder. Max pulled her coat and led her to a little house by the pond. An old woman opened the "
       "door and gave them warm milk and a blanket. When the rain stopped, Lily said thank you and hugged the "
       "kind woman. On the way home she saw a rainbow, and she and Max laughed all the way back.\n"},
      {"builtin:shop",
       "Sam wanted to buy a present for his sister. He had five coins in his pocket. At the shop he saw a toy "
       "car, a book with pictures and a blue hat. The toy car cost six coins, so it was too much. The book cost "
       "four coins and the hat cost three. Sam thought for a long time. His sister liked to read at night, so "
       "he chose the book. The shop man put it in a paper bag with a bow. At home Sam gave the bag to his "
       "sister. She opened it, smiled and read the first page out loud. Sam felt proud and warm inside.\n"},
      {"builtin:moon",
       "At night Mia looked at the moon from her bed. \"Mom, can I go to the moon one day?\" she asked. Her mom "
       "sat down and said, \"If you learn a lot and work hard, you can try.\" Mia made a rocket from a big box, "
       "two cups and some tape. She painted it white and drew a star on the side. Her friend Ben came to play, "
       "and they counted down together: three, two, one! They did not fly, but they laughed and dreamed of "
       "stars. That night Mia fell asleep with a smile, and in her dream she walked on the moon.\n"},
  };
  return texts;
}

}  // namespace ember::cli
